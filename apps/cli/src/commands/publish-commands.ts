import { randomUUID } from 'node:crypto';
import { JobPublishFailedError, createHeraldClient, type HeraldClient } from '@herald/client';
import type { Command } from 'commander';
import { readCliConfig } from '../cli-config.ts';
import { printObject } from '../output.ts';
import { requireApp, requireEnabledApp } from './app-check.ts';
import { deliverAtFromFlags, targetFromFlags, wholeNumber, type ScheduleFlags, type TargetFlags } from './send-options.ts';
import { cliLogger, withDatabase } from './with-database.ts';
import { followJob } from './follow-job.ts';
import { deviceFieldsFromFlags, type DeviceFlags } from './device-flags.ts';
import { endpointHostProblem, type Platform } from '@herald/contracts';
import { audienceProblem } from '@herald/db';
import { PublishFailedError } from '@herald/messaging';

async function withClient<T>(fn: (client: HeraldClient) => Promise<T>): Promise<T> {
  const config = readCliConfig();
  // The demuxer's horizon: a job scheduled further ahead is refused here, not parked after.
  // What Herald adapts of a job (an FCM expiry past its 28 days, say) is said in words on stderr,
  // and the client's own log lines go there too: stdout is the command's output (`--json`).
  const client = await createHeraldClient({
    url: config.AMQP_URL,
    connectionName: 'herald-cli',
    scheduleHorizonDays: config.SCHEDULE_HORIZON_DAYS,
    logger: cliLogger(),
    onNotices: (job, notices) => {
      for (const notice of notices) process.stderr.write(`note (job ${job.id}): ${notice}\n`);
    },
  });
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

const collectData = (pair: string, acc: Record<string, string>): Record<string, string> => {
  const eq = pair.indexOf('=');
  if (eq <= 0) throw new Error(`--data wants key=value, got "${pair}"`);
  return { ...acc, [pair.slice(0, eq)]: pair.slice(eq + 1) };
};

/** A JSON-object option, or {} when absent; a clear error naming the flag otherwise. */
function jsonOption(raw: unknown, flag: string): Record<string, unknown> {
  if (raw === undefined) return {};
  try {
    const value = JSON.parse(String(raw)) as unknown;
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch (err) {
    throw new Error(`--${flag} must be a JSON object: ${(err as Error).message}`, { cause: err });
  }
  throw new Error(`--${flag} must be a JSON object`);
}

export function registerPublishCommands(program: Command): void {
  program
    .command('register')
    .description('register a device for a user (published to push.registrations)')
    .requiredOption('--app <app>', 'app id')
    .requiredOption('--platform <platform>', 'apns, fcm or web')
    .option('--token <token>', 'device token (web: the subscription endpoint)')
    .option('--subscription <json>', "web: the browser's PushSubscription.toJSON(), instead of --endpoint, --p256dh and --auth")
    .option('--endpoint <url>', 'web: the subscription endpoint')
    .option('--p256dh <key>', "web: the subscription's p256dh key (base64url)")
    .option('--auth <secret>', "web: the subscription's auth secret (base64url)")
    .option('--application-server-key <key>', 'web: the VAPID public key the browser subscribed with (herald apps vapid show)')
    .requiredOption('--user <userId>', 'user id')
    .option('--timezone <zone>', 'IANA time zone, e.g. Europe/Berlin (an unknown zone is refused)')
    .option('--locale <locale>', 'BCP 47 language tag, e.g. en-GB')
    .option('--token-kind <kind>', 'APNs: device (default), voip (a PushKit token) or liveactivity (a Live Activity push token)')
    .option('--previous-token <token>', "the token this device held before (web: the old subscription's endpoint): its pushes go to the new one")
    .option('--json', 'print JSON')
    .action(async (o: Record<string, string | boolean | undefined>) => {
      const device = deviceFieldsFromFlags(o as DeviceFlags, 'register');
      // A disabled app's register is applied (registrar, POST /v1/devices): it is state, not a send,
      // and another user's login during an incident must take the device. The app must exist.
      const app = await withDatabase((db) => requireApp(db, String(o['app'])));
      // The registrar would park a subscription whose push service the app does not accept: say so now.
      const host = o['platform'] === 'web' ? endpointHostProblem(device.token, app.webPushHosts) : undefined;
      if (host !== undefined) throw new Error(`--endpoint: ${host}`);
      const reg = await withClient((c) =>
        c.publishRegistration({
          kind: 'register',
          app: String(o['app']),
          platform: o['platform'] as Platform,
          ...device,
          userId: String(o['user']),
          ...(typeof o['timezone'] === 'string' && { timezone: o['timezone'] }),
          ...(typeof o['locale'] === 'string' && { locale: o['locale'] }),
          ...(typeof o['tokenKind'] === 'string' && { tokenKind: o['tokenKind'] as 'device' | 'voip' | 'liveactivity' }),
          ...(typeof o['previousToken'] === 'string' && { previousToken: o['previousToken'] }),
          eventAt: new Date().toISOString(),
        }),
      );
      printObject({ published: 'registration', ...reg });
    });

  program
    .command('unregister')
    .description('unregister a device token')
    .requiredOption('--app <app>', 'app id')
    .requiredOption('--platform <platform>', 'apns, fcm or web')
    .option('--token <token>', 'device token (web: the subscription endpoint)')
    .option('--endpoint <url>', 'web: the subscription endpoint')
    .option('--subscription <json>', "web: the browser's PushSubscription.toJSON()")
    .option('--user <userId>', "only while the device is still this user's (a sign-out); without it, whoever holds it")
    .action(async (o: Record<string, string>) => {
      const { token } = deviceFieldsFromFlags(o as DeviceFlags, 'unregister');
      // A disabled app's unregister is applied too (registrar, DELETE /v1/devices): a logout during an
      // incident must not leave the device to the user who left it. The app must exist.
      await withDatabase((db) => requireApp(db, String(o['app'])));
      const reg = await withClient((c) =>
        c.publishRegistration({
          kind: 'unregister',
          app: String(o['app']),
          platform: o['platform'] as Platform,
          token,
          ...(o['user'] !== undefined && { userId: String(o['user']) }),
          eventAt: new Date().toISOString(),
        }),
      );
      printObject({ published: 'registration', ...reg });
    });

  program
    .command('send')
    .description('send a push job to one or more users, or to an audience (published to push.jobs)')
    .requiredOption('--app <app>', 'app id')
    .option('--user <userId...>', 'target user id(s)')
    .option('--topic <name>', "instead of --user: every subscriber of this topic of the app")
    .option('--followers-of <userId>', 'instead of --user: every follower of this user')
    .option('--active-within-days <n>', 'with --followers-of: only followers active within this many days')
    .option('--most-recent <n>', 'with --followers-of: only the n most recently active followers')
    .option('--broadcast', 'instead of --user: every device of the app')
    .option('--segment <filter>', 'with an audience: only devices matching this filter, e.g. \'platform = "apns" and appVersion >= "5.0"\'')
    .option('--title <title>', 'notification title')
    .option('--body <body>', 'notification body')
    .option('--category <category>', 'category for opt-outs', 'test')
    .option('--object <objectId>', 'object id for mutes')
    .option('--data <key=value>', 'custom data (repeatable)', collectData, {})
    .option('--id <jobId>', 'job id (idempotency key); default: a new UUID')
    .option('--ttl <seconds>', 'drop the push if not delivered within this many seconds (0: now or never, providers do not store it)')
    .option('--push-type <type>', 'alert, background, voip or liveactivity (default: alert when there is something to show, else background)')
    .option('--collapse-key <key>', 'printable ASCII, at most 64 bytes: a newer push with the same key replaces this one')
    .option('--content <json>', 'more content fields as a JSON object (e.g. {"threadId":"t1","apns":{"payload":{...}}})')
    .option('--badge <n>', 'app icon badge number (0 clears it)')
    .option('--sound <name>', 'sound to play, e.g. default')
    .option('--priority <priority>', 'high (default) or normal (delivered when convenient for the battery)')
    .option('--expires-at <iso>', 'drop the push if not delivered by this ISO-8601 instant (with --ttl the earlier wins)')
    .option('--deliver-at <iso>', 'deliver at this ISO-8601 instant (held until then)')
    .option('--local-time <HH:mm>', "deliver at this wall-clock time in each device's own timezone (next occurrence)")
    .option('--date <YYYY-MM-DD>', 'with --local-time: on this local date')
    .option('--jitter <duration>', 'with --local-time: spread deliveries over this ISO-8601 duration after it, e.g. PT30M')
    .option('--expires-after <duration>', "with --deliver-at or --local-time: drop each device's push if it cannot go within this ISO-8601 duration after its own due time (an outage, a backlog), e.g. PT2H")
    .option('--trace', 'log every step of this job at info level in the services, and follow it here: the demuxer\'s outcome and each device push\'s outcome as they are recorded')
    .option('--trace-timeout <seconds>', 'with --trace: stop following after this long', '30')
    .option('--accepted-at <iso>', 'when the job was first published: give it, with --id, to try again a job whose publish was not confirmed (its expiry is judged as at the first try)')
    .option('--json', 'print JSON')
    .action(async (o: Record<string, unknown>) => {
      const target = targetFromFlags(o as TargetFlags);
      const data = o['data'] as Record<string, string>;
      const deliverAt = deliverAtFromFlags(o as ScheduleFlags);
      // Every flag is checked before anything is published: a job published and then refused for a
      // later flag would be sent again, under a new id, when the command is run again.
      const traceTimeoutMs = o['trace'] === true ? wholeNumber('--trace-timeout', o['traceTimeout']) * 1000 : 0;
      const id = (o['id'] as string | undefined) ?? randomUUID();
      // The app must exist (and be enabled) before anything is published: the database says so.
      await withDatabase(async (db) => {
        await requireEnabledApp(db, String(o['app']));
        // As the API refuses it: a job to a topic no one created would be parked by the demuxer.
        const problem = 'audience' in target ? await audienceProblem(db.kysely, String(o['app']), target.audience) : undefined;
        if (problem !== undefined) throw new Error(`${problem} (\`herald topics list --app ${String(o['app'])}\` lists them)`);
      });
      const job = await withClient((c) =>
        c.publishPushJob({
          id,
          app: String(o['app']),
          ...target,
          category: String(o['category']),
          ...(o['object'] !== undefined && { objectId: String(o['object']) }),
          content: {
            ...jsonOption(o['content'], 'content'),
            ...(o['title'] !== undefined && { title: String(o['title']) }),
            ...(o['body'] !== undefined && { body: String(o['body']) }),
            ...(Object.keys(data).length > 0 && { data }),
            ...(o['pushType'] !== undefined && { pushType: String(o['pushType']) as 'alert' }),
            ...(o['badge'] !== undefined && { badge: wholeNumber('--badge', o['badge']) }),
            ...(o['sound'] !== undefined && { sound: String(o['sound']) }),
          },
          ...(o['collapseKey'] !== undefined && { collapseKey: String(o['collapseKey']) }),
          ...(o['ttl'] !== undefined && { ttl: wholeNumber('--ttl', o['ttl']) }),
          ...(o['priority'] !== undefined && { priority: String(o['priority']) as 'high' }),
          ...(o['expiresAt'] !== undefined && { expiresAt: String(o['expiresAt']) }),
          ...(deliverAt !== undefined && { deliverAt }),
          ...(o['trace'] === true && { trace: true }),
          ...(o['acceptedAt'] !== undefined && { acceptedAt: String(o['acceptedAt']) }),
        }),
      ).catch((err: unknown) => {
        // Unconfirmed is not unsent: the job may be queued, and only its id keeps it from going twice;
        // its first acceptance keeps a retry from being judged expired while the first copy is sent.
        if (!(err instanceof PublishFailedError)) throw err;
        const again = err instanceof JobPublishFailedError && err.job.acceptedAt !== undefined ? ` --accepted-at ${err.job.acceptedAt}` : '';
        throw new Error(`${err.message} (job ${id} may have been queued all the same: to try again, run the command again with --id ${id}${again}, which Herald takes once)`, { cause: err });
      });
      printObject({ published: 'push job', ...job });
      if (o['trace'] === true) {
        await withDatabase((db) => followJob(db, job.id, { timeoutMs: traceTimeoutMs, write: (line) => console.log(line) }));
      }
    });

  program
    .command('change')
    .description('publish a resource change (push.changes): its webhook subscribers get the diff')
    .requiredOption('--type <resourceType>', 'resource type, e.g. campaign')
    .requiredOption('--id <resourceId>', 'resource id')
    .option('--old <json>', 'the resource before, a JSON object (omit: it was created)')
    .option('--new <json>', 'the resource after, a JSON object (omit: it was deleted)')
    .option('--event-id <id>', 'event id (idempotency key); default: a new UUID')
    .option('--trace', 'log the fan-out and every delivery attempt at info level')
    .option('--json', 'print JSON')
    .action(async (o: Record<string, unknown>) => {
      const state = (flag: string): Record<string, unknown> | null => {
        const raw = o[flag];
        if (raw === undefined) return null;
        try {
          return JSON.parse(String(raw)) as Record<string, unknown>;
        } catch (err) {
          throw new Error(`--${flag} must be a JSON object: ${(err as Error).message}`, { cause: err });
        }
      };
      const change = await withClient((c) =>
        c.publishChange({
          id: (o['eventId'] as string | undefined) ?? randomUUID(),
          resource: { type: String(o['type']), id: String(o['id']) },
          old: state('old'),
          new: state('new'),
          ...(o['trace'] === true && { trace: true }),
        }),
      );
      printObject({ published: 'change', ...change });
    });
}
