import { loadConfig, optionalStr } from '@herald/config';
import { createAppCredentialStore, createSecretBox, type AppCredentialStore, type AppRow, type Database } from '@herald/db';
import type { Command } from 'commander';
import { printRows } from '../output.ts';
import { apnsFromFlags, credentialOptions, fcmFromFlags, type CredentialFlags } from './credential-options.ts';
import { withDatabase } from './with-database.ts';

const secretConfig = {
  HERALD_SECRET_KEY: optionalStr('32-byte key (64 hex characters or base64) that seals app credentials at rest', { secret: true }),
} as const;

function credentialStore(db: Database): AppCredentialStore {
  const key = loadConfig(secretConfig, process.env).HERALD_SECRET_KEY;
  return createAppCredentialStore(db.kysely, key === undefined ? undefined : createSecretBox(key));
}

const view = (a: AppRow) => ({
  id: a.id,
  enabled: a.enabled,
  apnsTopic: a.apnsTopic,
  apns: a.apnsAuth == null ? '(process default)' : `${a.apnsAuth} @ ${a.apnsEndpoint ?? ''}`,
  fcm: a.fcmAuth == null ? '(process default)' : `${a.fcmAuth} ${a.fcmProjectId ?? ''} @ ${a.fcmEndpoint ?? ''}`,
  credentialsVersion: a.credentialsVersion,
});

const print = (a: AppRow): void => printRows([view(a)], false);

type AddFlags = CredentialFlags & { apnsTopic?: string; disabled?: boolean };

/** `herald apps add|update|enable|disable|rotate|list`: apps as data, credentials sealed with HERALD_SECRET_KEY. */
export function registerAppCommands(program: Command): void {
  const apps = program.command('apps').description('apps Herald sends for, with their own credentials');
  credentialOptions(
    apps
      .command('add <id>')
      .description('add an app (or update the topic and enabled flag of an existing one), optionally with its credentials')
      .option('--apns-topic <topic>', 'APNs topic (the iOS bundle id)')
      .option('--disabled', 'create it disabled'),
  ).action(async (id: string, o: AddFlags) => {
    const [apns, fcm] = [await apnsFromFlags(o), await fcmFromFlags(o)];
    const row = await withDatabase(async (db) => {
      const plain = { ...(o.apnsTopic !== undefined && { apnsTopic: o.apnsTopic }), enabled: o.disabled !== true };
      const store = credentialStore(db);
      if ((await db.apps.get(id)) === undefined) return store.create({ id, ...plain, ...(apns && { apns }), ...(fcm && { fcm }) });
      await store.update(id, plain);
      return apns !== undefined || fcm !== undefined ? store.rotate(id, { ...(apns && { apns }), ...(fcm && { fcm }) }) : (db.apps.get(id) as Promise<AppRow>);
    });
    print(row);
  });
  apps
    .command('update <id>')
    .description("change an app's APNs topic")
    .requiredOption('--apns-topic <topic>', 'APNs topic (the iOS bundle id)')
    .action(async (id: string, o: { apnsTopic: string }) => print(await withDatabase((db) => credentialStore(db).update(id, { apnsTopic: o.apnsTopic }))));
  for (const [name, enabled] of [['enable', true], ['disable', false]] as const) {
    apps
      .command(`${name} <id>`)
      .description(enabled ? 'let the app send again' : 'stop the app: its jobs and pushes are parked (code app-disabled)')
      .action(async (id: string) => print(await withDatabase((db) => credentialStore(db).update(id, { enabled }))));
  }
  credentialOptions(apps.command('rotate <id>').description('replace the app\'s APNs and/or FCM credentials; pushers switch without a restart')).action(
    async (id: string, o: CredentialFlags) => {
      const [apns, fcm] = [await apnsFromFlags(o), await fcmFromFlags(o)];
      if (apns === undefined && fcm === undefined) throw new Error('give APNs (--apns-key-file or --apns-cert-file) or FCM (--fcm-service-account or --fcm-access-token) credentials');
      print(await withDatabase((db) => credentialStore(db).rotate(id, { ...(apns && { apns }), ...(fcm && { fcm }) })));
    },
  );
  apps
    .command('list')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const rows = await withDatabase((db) => db.apps.list());
      printRows(rows.map(view), o.json === true);
    });
}
