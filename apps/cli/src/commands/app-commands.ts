import { loadConfig, optionalStr } from '@herald/config';
import { ApnsCredentials } from '@herald/contracts';
import { createAppCredentialStore, createSecretBox, resealAppSecrets, type AppCredentialStore, type AppRow, type ConnectionSummary, type Database } from '@herald/db';
import type { Command } from 'commander';
import { suffixedTopicWarning } from '@herald/providers';
import { printRows } from '../output.ts';
import { apnsConnectionFromFlags, connectionOptions, fcmConnectionFromFlags, type ConnectionFlags } from './connection-options.ts';
import { apnsFromFlags, credentialOptions, fcmFromFlags, type CredentialFlags } from './credential-options.ts';
import { auditedCli } from './cli-audit.ts';
import { withDatabase } from './with-database.ts';
import { registerWebPushCommands } from './web-push-commands.ts';

/** What the audit log keeps of an app change: the flags given (never their values) and the app after it. */
const audit = (action: string, id: string, flags: object = {}) => ({ action, target: id, request: { flags: Object.keys(flags).sort(), via: 'cli' } });
const summary = (a: AppRow) => ({ id: a.id, enabled: a.enabled, credentialsVersion: a.credentialsVersion });

const secretConfig = {
  HERALD_SECRET_KEY: optionalStr(
    '32-byte key (64 hex characters or base64) that seals app credentials at rest; during a rotation several, comma-separated: the first seals, each opens',
    { secret: true },
  ),
} as const;

function credentialStore(db: Database): AppCredentialStore {
  return credentialStoreOn(db.kysely);
}

/** The store over `kysely`: the database, or one transaction of it. */
function credentialStoreOn(kysely: Database['kysely']): AppCredentialStore {
  const key = loadConfig(secretConfig, process.env).HERALD_SECRET_KEY;
  return createAppCredentialStore(kysely, key === undefined ? undefined : createSecretBox(key));
}

/** "host:port, ca, proxy" for what the app sets itself; empty when it uses the pusher's defaults. */
const connection = (c: ConnectionSummary | undefined): string =>
  c === undefined
    ? ''
    : [c.host !== null || c.port !== null ? `${c.host ?? '(default host)'}:${c.port ?? '(default port)'}` : '', c.ca ? 'ca' : '', c.proxy ? 'proxy' : ''].filter((p) => p !== '').join(', ');

/** ", expires 2027-12-06" for an APNs client certificate ("expiry not known yet": stored before 0039, no pusher has read it since); "" for a .p8 key. */
const certificateExpiry = (a: AppRow): string => {
  if (a.apnsAuth !== 'certificate') return '';
  return a.apnsCertificateExpiresAt == null ? ', expiry not known yet' : `, expires ${a.apnsCertificateExpiresAt.toISOString().slice(0, 10)}`;
};

const view = (a: AppRow) => ({
  id: a.id,
  enabled: a.enabled,
  apnsTopic: a.apnsTopic,
  apns: a.apnsAuth == null ? '(process default)' : `${a.apnsAuth} @ ${a.apnsEndpoint ?? ''}${certificateExpiry(a)}`,
  fcm: a.fcmAuth == null ? '(process default)' : `${a.fcmAuth} ${a.fcmProjectId ?? ''} @ ${a.fcmEndpoint ?? ''}`,
  apnsConnection: connection(a.apnsConnection),
  fcmConnection: connection(a.fcmConnection),
  credentialsVersion: a.credentialsVersion,
});

const print = (a: AppRow): void => printRows([view(a)], false);

type AddFlags = CredentialFlags & ConnectionFlags & { apnsTopic?: string; disabled?: boolean };
type UpdateFlags = ConnectionFlags & { apnsTopic?: string };

async function connectionsFromFlags(o: ConnectionFlags) {
  const [apnsConnection, fcmConnection] = [await apnsConnectionFromFlags(o), await fcmConnectionFromFlags(o)];
  return { ...(apnsConnection && { apnsConnection }), ...(fcmConnection && { fcmConnection }) };
}

/** `herald apps add|update|enable|disable|rotate|reseal|list`: apps as data, credentials sealed with HERALD_SECRET_KEY. */
export function registerAppCommands(program: Command): void {
  const apps = program.command('apps').description('apps Herald sends for, with their own credentials');
  connectionOptions(
    credentialOptions(
      apps
        .command('add <id>')
        .description('add an app (or update the topic of an existing one), optionally with its credentials and connection settings; an existing app stays enabled or disabled as it was (herald apps enable|disable)')
        .option('--apns-topic <topic>', 'APNs topic: the iOS bundle id itself (Herald appends .voip, .push-type.liveactivity, … per push type)')
        .option('--disabled', 'create it disabled (or disable an existing one)'),
    ),
  ).action(async (id: string, o: AddFlags) => {
    const [apns, fcm, connections] = [await apnsFromFlags(o), await fcmFromFlags(o), await connectionsFromFlags(o)];
    const row = await auditedCli(audit('app.create', id, o), async (db) => {
      const topic = o.apnsTopic !== undefined ? { apnsTopic: o.apnsTopic } : {};
      const store = credentialStore(db);
      // A new app's endpoint defaults to development; an existing one's rotation keeps its own.
      if ((await db.apps.get(id)) === undefined) return store.create({ id, ...topic, enabled: o.disabled !== true, ...(apns && { apns: ApnsCredentials.parse(apns) }), ...(fcm && { fcm }), ...connections });
      // One transaction: a refused step (connection settings for a platform without credentials)
      // leaves the app as it was, not with its credentials rotated and the command failed.
      return db.kysely.transaction().execute(async (trx) => {
        const inTx = credentialStoreOn(trx);
        // Adding keys to an app disabled during an incident must not enable it again (unseen in the audit's app.enable).
        await inTx.update(id, { ...topic, ...(o.disabled === true && { enabled: false }) });
        if (apns !== undefined || fcm !== undefined) await inTx.rotate(id, { ...(apns && { apns }), ...(fcm && { fcm }) });
        // After the rotation: connection settings need the app's own credentials.
        return inTx.update(id, connections);
      });
    }, summary);
    warnOfSuffixedTopic(id, o.apnsTopic);
    print(row);
  });
  connectionOptions(
    apps
      .command('update <id>')
      .description("change an app's APNs topic and/or its connection settings (endpoint, CA bundle, proxy)")
      .option('--apns-topic <topic>', 'APNs topic: the iOS bundle id itself (Herald appends .voip, .push-type.liveactivity, … per push type)'),
  ).action(async (id: string, o: UpdateFlags) => {
    const changes = { ...(o.apnsTopic !== undefined && { apnsTopic: o.apnsTopic }), ...(await connectionsFromFlags(o)) };
    if (Object.keys(changes).length === 0) throw new Error('give --apns-topic or connection settings (--apns-address, --apns-ca-file, --fcm-proxy-url, ...)');
    print(await auditedCli(audit('app.update', id, o), (db) => credentialStore(db).update(id, changes), summary));
    warnOfSuffixedTopic(id, o.apnsTopic);
  });
  for (const [name, enabled] of [['enable', true], ['disable', false]] as const) {
    apps
      .command(`${name} <id>`)
      .description(enabled ? 'let the app send again' : 'stop the app: its jobs and pushes are parked (code app-disabled)')
      .action(async (id: string) => print(await auditedCli(audit(`app.${name}`, id), (db) => credentialStore(db).update(id, { enabled }), summary)));
  }
  credentialOptions(apps.command('rotate <id>').description('replace the app\'s APNs and/or FCM credentials; pushers switch without a restart')).action(
    async (id: string, o: CredentialFlags) => {
      const [apns, fcm] = [await apnsFromFlags(o), await fcmFromFlags(o)];
      if (apns === undefined && fcm === undefined) throw new Error('give APNs (--apns-key-file or --apns-cert-file) or FCM (--fcm-service-account or --fcm-access-token) credentials');
      print(await auditedCli(audit('app.rotate-credentials', id, o), (db) => credentialStore(db).rotate(id, { ...(apns && { apns }), ...(fcm && { fcm }) }), summary));
    },
  );
  registerWebPushCommands(apps, credentialStore);
  apps
    .command('reseal')
    .description("seal every app's secrets again by the first key of HERALD_SECRET_KEY (new,old during a rotation), so the old key can be dropped")
    .action(async () => {
      const key = loadConfig(secretConfig, process.env).HERALD_SECRET_KEY;
      if (key === undefined) throw new Error('HERALD_SECRET_KEY is not set: give the new key first and the old one after it, comma-separated');
      const box = createSecretBox(key);
      const result = await auditedCli({ action: 'apps.reseal', target: 'apps', request: { via: 'cli' } }, (db) => resealAppSecrets(db.kysely, box));
      const meanwhile = result.changedMeanwhile === 0 ? '' : `; ${result.changedMeanwhile} changed meanwhile by another admin (left to that change)`;
      process.stdout.write(`resealed ${result.resealed} secret(s) of ${result.apps} app(s) by the first key; ${result.current} sealed by it already${meanwhile}\n`);
      if (result.unopened.length === 0) return;
      // Not opened by any key given: still sealed by a key this command was not given; the old key must stay until they are resealed.
      for (const u of result.unopened) process.stderr.write(`app "${u.app}" ${u.column}: ${u.reason}\n`);
      process.stderr.write(`${result.unopened.length} secret(s) opened by none of the keys given were left as they are: keep the key that sealed them in HERALD_SECRET_KEY\n`);
      process.exitCode = 1;
    });
  apps
    .command('list')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const rows = await withDatabase((db) => db.apps.list());
      printRows(rows.map(view), o.json === true);
    });
}

/** A topic given with one of Apple's suffixes is stored as given, with a warning on stderr. */
function warnOfSuffixedTopic(id: string, topic: string | undefined): void {
  const warning = suffixedTopicWarning(id, topic);
  if (warning !== undefined) process.stderr.write(`warning: ${warning}\n`);
}
