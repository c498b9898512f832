import { sql, type Kysely, type Updateable } from 'kysely';
import { apnsCertificateValidity, type ApnsCredentials, type ApnsCredentialsRotation, type AppCreate, type AppRotate, type AppUpdate, type FcmCredentials, type Platform, type ProviderConnection, type WebPushUpdate } from '@herald/contracts';
import { connectionColumns, proxyContext, readConnection, setsConnection, touchesConnection, type ConnectionChange } from './app-connections.ts';
import { createAppRepository, type AppRow } from './app-repository.ts';
import type { AppsTable, HeraldTables } from './tables.ts';
import { SecretBoxError, type SecretBox } from './secret-box.ts';
import { generateVapid, readWeb, rotateVapid, updateWebPush, type StoredWebCredentials, type VapidKeyPair, type VapidWriteResult } from './web-vapid-store.ts';

export type { StoredWebCredentials, VapidKeyPair } from './web-vapid-store.ts';

/** Thrown for an admin change that cannot apply (unknown app, app exists, no secret key). */
export class AppAdminError extends Error {
  override readonly name = 'AppAdminError';
  constructor(
    readonly code: 'unknown-app' | 'app-exists' | 'no-secret-key' | 'invalid-credentials' | 'invalid-connection' | 'vapid-exists' | 'no-vapid' | 'previous-vapid-in-use',
    message: string,
  ) {
    super(message);
  }
}

/** An app's credentials for one platform with its connection settings (endpoint, CA, proxy), if it has any. */
export type StoredApnsCredentials = ApnsCredentials & { connection?: ProviderConnection };
export type StoredFcmCredentials = FcmCredentials & { connection?: ProviderConnection };

/** Add, update, disable apps and rotate their credentials (secrets sealed), and read them back for pushers. */
export interface AppCredentialStore {
  create(input: AppCreate): Promise<AppRow>;
  /** Plain settings and connection settings; a connection change moves credentials_version. */
  update(id: string, changes: AppUpdate): Promise<AppRow>;
  rotate(id: string, credentials: AppRotate): Promise<AppRow>;
  /** Decrypted credentials (and connection settings) for a pusher, or undefined when the app has none for that platform. */
  readApns(id: string): Promise<StoredApnsCredentials | undefined>;
  readFcm(id: string): Promise<StoredFcmCredentials | undefined>;
  /** Web Push: the app's first VAPID key pair (from web-push's generateVAPIDKeys) and its contact subject; refused when it has one. */
  generateVapid(id: string, input: { subject: string; keys: VapidKeyPair }): Promise<AppRow>;
  /** A new current pair; the current one becomes the previous one (kept for subscriptions made under it). */
  rotateVapid(id: string, input: { subject?: string | undefined; keys: VapidKeyPair; force?: boolean }): Promise<AppRow>;
  /** The contact subject and/or the push-service allow-list (hosts null: the default list). */
  updateWebPush(id: string, changes: WebPushUpdate): Promise<AppRow>;
  readWeb(id: string): Promise<StoredWebCredentials | undefined>;
}

/** The associated data an app's credentials are sealed under ("apns:chat"): an envelope cannot be moved to another app or platform. */
export const credentialContext = (platform: Platform, app: string): string => `${platform}:${app}`;

/** When an APNs client certificate stops being valid (null: token auth, or a certificate that cannot be read). */
const certificateExpiry = (certPem: string | undefined): Date | null => {
  const validity = certPem === undefined ? undefined : apnsCertificateValidity(certPem);
  return validity === undefined ? null : new Date(validity.untilMs);
};

/** A rotation without `endpoint` keeps the app's (an insert without it takes the column's default, development). */
function apnsColumns(app: string, c: ApnsCredentialsRotation, box: SecretBox) {
  const secret = c.auth === 'token' ? { keyPem: c.keyPem } : { certPem: c.certPem, keyPem: c.keyPem, passphrase: c.passphrase };
  return {
    apns_auth: c.auth,
    apns_key_id: c.auth === 'token' ? c.keyId : null,
    apns_team_id: c.auth === 'token' ? c.teamId : null,
    ...(c.endpoint !== undefined && { apns_endpoint: c.endpoint }),
    apns_secret: box.seal(JSON.stringify(secret), credentialContext('apns', app)),
    apns_certificate_expires_at: certificateExpiry(secret.certPem),
  };
}

function fcmProjectOf(c: FcmCredentials): string {
  if (c.auth === 'access-token' || c.projectId !== undefined) return c.projectId as string;
  const projectId = (JSON.parse(c.serviceAccountJson) as { project_id?: unknown }).project_id;
  if (typeof projectId !== 'string') throw new AppAdminError('invalid-credentials', 'the service-account JSON has no project_id: give projectId');
  return projectId;
}

function fcmColumns(app: string, c: FcmCredentials, box: SecretBox) {
  const secret = c.auth === 'access-token' ? c.accessToken : c.serviceAccountJson;
  return { fcm_auth: c.auth, fcm_endpoint: c.endpoint, fcm_project_id: fcmProjectOf(c), fcm_secret: box.seal(secret, credentialContext('fcm', app)) };
}

function need(box: SecretBox | undefined): SecretBox {
  if (box === undefined) throw new AppAdminError('no-secret-key', 'HERALD_SECRET_KEY is not set: credentials cannot be stored or read');
  return box;
}

function credentialColumns(id: string, c: { apns?: ApnsCredentialsRotation | undefined; fcm?: FcmCredentials | undefined }, box: SecretBox | undefined) {
  return {
    ...(c.apns !== undefined ? apnsColumns(id, c.apns, need(box)) : {}),
    ...(c.fcm !== undefined ? fcmColumns(id, c.fcm, need(box)) : {}),
  };
}

const PLATFORM_NAME: Record<Platform, string> = { apns: 'APNs', fcm: 'FCM', web: 'Web Push' };

/** A VAPID write's outcome as the admin error it is (or nothing when it was done). */
function vapidOutcome(result: VapidWriteResult, id: string): void {
  switch (result) {
    case 'done':
      return;
    case 'unknown-app':
      throw new AppAdminError('unknown-app', `unknown app "${id}"`);
    case 'vapid-exists':
      throw new AppAdminError('vapid-exists', `app "${id}" already has VAPID keys: rotate them (the current pair is kept as the previous one)`);
    case 'no-vapid':
      throw new AppAdminError('no-vapid', `app "${id}" has no VAPID keys yet: generate them first, with a subject`);
    case 'previous-vapid-in-use':
      throw new AppAdminError(
        'previous-vapid-in-use',
        `app "${id}" still has browsers subscribed with its previous VAPID key: rotating again forgets that key, and pushes to them are parked until each subscribes again; rotate with force to do it anyway`,
      );
  }
}

/** Connection settings only apply to an app's own credentials: refuse setting them on a platform without. */
function checkConnection(platform: Platform, change: ConnectionChange, hasCredentials: boolean): void {
  if (!setsConnection(change) || hasCredentials) return;
  throw new AppAdminError(
    'invalid-connection',
    `${platform}Connection: the app has no ${PLATFORM_NAME[platform]} credentials of its own; connection settings apply to them (give ${platform} credentials too; apps without use the pusher's defaults)`,
  );
}

/** Both platforms' connection columns for an insert or update. */
function connectionSet(id: string, apns: ConnectionChange, fcm: ConnectionChange, box: SecretBox | undefined): Updateable<AppsTable> {
  const a = connectionColumns('apns', id, apns, () => need(box));
  const f = connectionColumns('fcm', id, fcm, () => need(box));
  return {
    ...(a.host !== undefined && { apns_address: a.host }),
    ...(a.port !== undefined && { apns_port: a.port }),
    ...(a.caPem !== undefined && { apns_ca_pem: a.caPem }),
    ...(a.proxySecret !== undefined && { apns_proxy_secret: a.proxySecret }),
    ...(f.host !== undefined && { fcm_host: f.host }),
    ...(f.port !== undefined && { fcm_port: f.port }),
    ...(f.caPem !== undefined && { fcm_ca_pem: f.caPem }),
    ...(f.proxySecret !== undefined && { fcm_proxy_secret: f.proxySecret }),
  };
}

async function selectApp(db: Kysely<HeraldTables>, id: string): Promise<AppRow> {
  const row = await createAppRepository(db).get(id);
  if (row === undefined) throw new AppAdminError('unknown-app', `unknown app "${id}"`);
  return row;
}

/**
 * A certificate sealed before its expiry had a column (0039) gets it when a pusher first reads it,
 * for the app list and the monitor's alarm. Only while the row still holds that sealed secret: a
 * rotation meanwhile has set its own.
 */
async function noteCertificateExpiry(db: Kysely<HeraldTables>, id: string, sealed: string, certPem: string | undefined): Promise<void> {
  const expiresAt = certificateExpiry(certPem);
  if (expiresAt === null) return;
  await db
    .updateTable('apps')
    .set({ apns_certificate_expires_at: expiresAt })
    .where('id', '=', id)
    .where('apns_secret', '=', sealed)
    .where('apns_certificate_expires_at', 'is', null)
    .execute();
}

export function createAppCredentialStore(db: Kysely<HeraldTables>, box: SecretBox | undefined): AppCredentialStore {
  const openAs = (envelope: string, ctx: string, what: string): string => {
    try {
      return need(box).open(envelope, ctx);
    } catch (err) {
      throw err instanceof SecretBoxError ? new SecretBoxError(`${what}: ${err.message}`, err.code) : err;
    }
  };
  const open = (envelope: string, platform: Platform, id: string): string => openAs(envelope, credentialContext(platform, id), `app "${id}" ${platform} credentials`);
  const openProxy = (platform: Platform, id: string) => (envelope: string) => openAs(envelope, proxyContext(platform, id), `app "${id}" ${platform} proxy URL`);
  /** VAPID private keys are sealed like the other credentials: AES-256-GCM, associated data "web:<app>". */
  const vapidBox = (id: string) => ({ seal: (key: string) => need(box).seal(key, credentialContext('web', id)), open: (envelope: string) => open(envelope, 'web', id) });
  const web = {
    async generateVapid(id: string, input: { subject: string; keys: VapidKeyPair }) {
      vapidOutcome(await generateVapid(db, id, input.subject, input.keys, vapidBox(id)), id);
      return selectApp(db, id);
    },
    async rotateVapid(id: string, input: { subject?: string | undefined; keys: VapidKeyPair; force?: boolean }) {
      vapidOutcome(await rotateVapid(db, id, input.subject, input.keys, vapidBox(id), input.force === true), id);
      return selectApp(db, id);
    },
    async updateWebPush(id: string, changes: WebPushUpdate) {
      vapidOutcome(await updateWebPush(db, id, changes), id);
      return selectApp(db, id);
    },
    readWeb: (id: string) => readWeb(db, id, vapidBox(id)),
  };
  return {
    ...web,
    async create(input) {
      checkConnection('apns', input.apnsConnection, input.apns !== undefined);
      checkConnection('fcm', input.fcmConnection, input.fcm !== undefined);
      const columns = { ...credentialColumns(input.id, input, box), ...connectionSet(input.id, input.apnsConnection, input.fcmConnection, box) };
      const inserted = await db
        .insertInto('apps')
        .values({ id: input.id, apns_topic: input.apnsTopic ?? null, fcm_project_id: null, enabled: input.enabled, ...columns, credentials_version: 1 })
        .onConflict((oc) => oc.column('id').doNothing())
        .returning('id')
        .executeTakeFirst();
      if (inserted === undefined) throw new AppAdminError('app-exists', `app "${input.id}" already exists`);
      return selectApp(db, input.id);
    },
    async update(id, changes) {
      const reconnect = touchesConnection(changes.apnsConnection) || touchesConnection(changes.fcmConnection);
      if (reconnect) {
        const app = await selectApp(db, id);
        checkConnection('apns', changes.apnsConnection, app.apnsAuth != null);
        checkConnection('fcm', changes.fcmConnection, app.fcmAuth != null);
      }
      const set = {
        ...(changes.apnsTopic !== undefined ? { apns_topic: changes.apnsTopic } : {}),
        ...(changes.enabled !== undefined ? { enabled: changes.enabled } : {}),
        ...connectionSet(id, changes.apnsConnection, changes.fcmConnection, box),
        ...(reconnect && { credentials_version: sql<number>`credentials_version + 1` }),
      };
      const done = await db.updateTable('apps').set({ ...set, updated_at: sql<Date>`now()` }).where('id', '=', id).returning('id').executeTakeFirst();
      if (done === undefined) throw new AppAdminError('unknown-app', `unknown app "${id}"`);
      return selectApp(db, id);
    },
    async rotate(id, credentials) {
      const columns = credentialColumns(id, credentials, box);
      const done = await db
        .updateTable('apps')
        .set({ ...columns, credentials_version: sql<number>`credentials_version + 1`, updated_at: sql<Date>`now()` })
        .where('id', '=', id)
        .returning('id')
        .executeTakeFirst();
      if (done === undefined) throw new AppAdminError('unknown-app', `unknown app "${id}"`);
      return selectApp(db, id);
    },
    async readApns(id) {
      const r = await db
        .selectFrom('apps')
        .select(['apns_auth', 'apns_key_id', 'apns_team_id', 'apns_endpoint', 'apns_secret', 'apns_address', 'apns_port', 'apns_ca_pem', 'apns_proxy_secret', 'apns_certificate_expires_at'])
        .where('id', '=', id)
        .executeTakeFirst();
      if (r?.apns_auth == null || r.apns_secret === null) return undefined;
      const secret = JSON.parse(open(r.apns_secret, 'apns', id)) as { keyPem: string; certPem?: string; passphrase?: string };
      // Best effort: the column only informs, so a write that fails (or waits on a lock) must not stop the app's pushes; the next read tries again.
      if (r.apns_auth === 'certificate' && r.apns_certificate_expires_at === null) await noteCertificateExpiry(db, id, r.apns_secret, secret.certPem).catch(() => undefined);
      const connection = readConnection({ host: r.apns_address, port: r.apns_port, caPem: r.apns_ca_pem, proxySecret: r.apns_proxy_secret }, openProxy('apns', id));
      const extra = { endpoint: r.apns_endpoint, ...(connection !== undefined && { connection }) };
      if (r.apns_auth === 'token') {
        return { auth: 'token', keyPem: secret.keyPem, keyId: r.apns_key_id ?? '', teamId: r.apns_team_id ?? '', ...extra };
      }
      return { auth: 'certificate', certPem: secret.certPem ?? '', keyPem: secret.keyPem, ...(secret.passphrase !== undefined && { passphrase: secret.passphrase }), ...extra };
    },
    async readFcm(id) {
      const r = await db
        .selectFrom('apps')
        .select(['fcm_auth', 'fcm_endpoint', 'fcm_project_id', 'fcm_secret', 'fcm_host', 'fcm_port', 'fcm_ca_pem', 'fcm_proxy_secret'])
        .where('id', '=', id)
        .executeTakeFirst();
      if (r?.fcm_auth == null || r.fcm_secret === null || r.fcm_project_id === null) return undefined;
      const secret = open(r.fcm_secret, 'fcm', id);
      const connection = readConnection({ host: r.fcm_host, port: r.fcm_port, caPem: r.fcm_ca_pem, proxySecret: r.fcm_proxy_secret }, openProxy('fcm', id));
      const extra = { projectId: r.fcm_project_id, endpoint: r.fcm_endpoint, ...(connection !== undefined && { connection }) };
      return r.fcm_auth === 'access-token'
        ? { auth: 'access-token', accessToken: secret, ...extra }
        : { auth: 'service-account', serviceAccountJson: secret, ...extra };
    },
  };
}
