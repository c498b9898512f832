import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { vapidSubjectProblem } from '@herald/contracts';
import { generateVapidKeys } from '@herald/providers';

/**
 * The local contact subject: a dotted domain, as every push service takes (Apple's refuses
 * localhost with 403 BadJwtToken; the web-pusher refuses such a WEB_PUSH_VAPID_SUBJECT at start-up).
 */
const LOCAL_SUBJECT = 'mailto:herald@example.com';

/**
 * The web-pusher's process-level VAPID identity under `npm start`, for apps without keys of their
 * own (like the sandbox stands in for Apple's and Google's credentials). Kept in the state
 * directory so browser subscriptions made under it keep working across restarts; an operator's
 * own WEB_PUSH_VAPID_* settings win. Local use only: the private key is a plain file. A file
 * written before the web-pusher refused it (subject mailto:herald@localhost) gets LOCAL_SUBJECT and
 * keeps its keys, so subscriptions made under them go on working.
 */
export async function localVapidEnv(stateDir: string, env: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  if (env['WEB_PUSH_VAPID_PUBLIC_KEY'] !== undefined) return {};
  const file = join(stateDir, 'web-push-vapid.json');
  if (!existsSync(file)) {
    const keys = await generateVapidKeys();
    writeFileSync(file, `${JSON.stringify({ ...keys, subject: LOCAL_SUBJECT }, null, 2)}\n`, { mode: 0o600 });
  }
  const stored = JSON.parse(readFileSync(file, 'utf8')) as { publicKey: string; privateKey: string; subject: string };
  if (vapidSubjectProblem(stored.subject) !== undefined) {
    stored.subject = LOCAL_SUBJECT;
    writeFileSync(file, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
  }
  return { WEB_PUSH_VAPID_PUBLIC_KEY: stored.publicKey, WEB_PUSH_VAPID_PRIVATE_KEY: stored.privateKey, WEB_PUSH_VAPID_SUBJECT: stored.subject };
}
