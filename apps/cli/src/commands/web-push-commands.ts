import { DEFAULT_WEB_PUSH_HOSTS, vapidGenerateNotice, VapidSubject, WebPushHost } from '@herald/contracts';
import type { AppCredentialStore, AppRow, Database } from '@herald/db';
import { generateVapidKeys } from '@herald/providers';
import type { Command } from 'commander';
import { printObject } from '../output.ts';
import { auditedCli } from './cli-audit.ts';
import { requireApp } from './app-check.ts';
import { withDatabase } from './with-database.ts';

type Store = (db: Database) => Pick<AppCredentialStore, 'generateVapid' | 'rotateVapid' | 'updateWebPush'>;

/** What the CLI shows of an app's Web Push settings: public keys only. */
export const webPushSummary = (a: AppRow) => ({
  app: a.id,
  vapidPublicKey: a.webVapidPublicKey ?? null,
  previousPublicKey: a.webVapidPreviousPublicKey ?? null,
  subject: a.webVapidSubject ?? null,
  hosts: a.webPushHosts ?? [...DEFAULT_WEB_PUSH_HOSTS],
  defaultHosts: a.webPushHosts == null,
  credentialsVersion: a.credentialsVersion,
});
const auditSummary = (a: AppRow) => ({ id: a.id, vapidPublicKey: a.webVapidPublicKey ?? null, credentialsVersion: a.credentialsVersion });
const audit = (action: string, id: string, flags: object) => ({ action, target: id, request: { flags: Object.keys(flags).sort(), via: 'cli' } });

/** A flag value checked with its contract schema; the error names the flag. */
function checked<T>(flag: string, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: Array<{ message: string }> } } }, value: unknown): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new Error(`${flag}: ${r.error.issues.map((i) => i.message).join('; ')}`);
  return r.data;
}

/**
 * `herald apps vapid generate|rotate|subject|show` and `herald apps web-hosts`: an app's VAPID keys
 * (the private key sealed with HERALD_SECRET_KEY; only public keys are shown) and the push-service
 * hosts its browser subscriptions may use.
 */
export function registerWebPushCommands(apps: Command, store: Store): void {
  const vapid = apps.command('vapid').description("an app's Web Push VAPID keys (RFC 8292): web front ends subscribe with the public key");
  vapid
    .command('generate <id>')
    .description("generate the app's first VAPID key pair (refused when it has one: rotate it)")
    .requiredOption('--subject <url>', 'contact for push services: mailto:ops@example.com or an https: URL')
    .option('--json', 'print JSON')
    .action(async (id: string, o: { subject: string; json?: boolean }) => {
      const subject = checked('--subject', VapidSubject, o.subject);
      const keys = await generateVapidKeys();
      const row = await auditedCli(audit('app.generate-vapid', id, o), (db) => store(db).generateVapid(id, { subject, keys }), auditSummary);
      const notice = vapidGenerateNotice(id);
      printObject({ ...webPushSummary(row), notices: [notice] });
      if (o.json !== true) process.stderr.write(`warning: ${notice}\n`);
    });
  vapid
    .command('rotate <id>')
    .description('a new VAPID key pair; the current one is kept as the previous one for subscriptions made under it (pushers switch without a restart)')
    .option('--subject <url>', 'also replace the contact subject')
    .option('--force', 'rotate even while browsers are subscribed with the previous key (it is forgotten: pushes to them park until they subscribe again)')
    .option('--json', 'print JSON')
    .action(async (id: string, o: { subject?: string; force?: boolean; json?: boolean }) => {
      const subject = o.subject === undefined ? undefined : checked('--subject', VapidSubject, o.subject);
      const keys = await generateVapidKeys();
      const row = await auditedCli(audit('app.rotate-vapid', id, o), (db) => store(db).rotateVapid(id, { subject, keys, force: o.force === true }), auditSummary);
      printObject(webPushSummary(row));
    });
  vapid
    .command('subject <id> <url>')
    .description('replace the contact subject (mailto: or https:) pushes are signed with')
    .action(async (id: string, url: string) => {
      const subject = checked('subject', VapidSubject, url);
      printObject(webPushSummary(await auditedCli(audit('app.update-web-push', id, { subject }), (db) => store(db).updateWebPush(id, { subject }), auditSummary)));
    });
  vapid
    .command('show <id>')
    .description("the app's VAPID public key (never the private one), subject and push-service hosts")
    // Printed as JSON always; --json kept so scripts that pass it go on working.
    .option('--json', 'print JSON')
    .action(async (id: string) => printObject(webPushSummary(await withDatabase((db) => requireApp(db, id)))));
  apps
    .command('web-hosts <id> [hosts...]')
    .description('the push-service hosts the app\'s browser subscriptions may use ("*.example.com": its subdomains); --default: the well-known browser push services')
    .option('--default', 'back to the default list')
    .action(async (id: string, hosts: string[], o: { default?: boolean }) => {
      if ((o.default === true) === hosts.length > 0) throw new Error('give hosts, or --default');
      const list = o.default === true ? null : hosts.map((h) => checked(`host "${h}"`, WebPushHost, h));
      const row = await auditedCli(audit('app.update-web-push', id, { hosts: list }), (db) => store(db).updateWebPush(id, { hosts: list }), (a) => ({ id: a.id, hosts: a.webPushHosts ?? null }));
      printObject(webPushSummary(row));
    });
}
