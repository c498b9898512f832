import { sql, type Kysely } from 'kysely';
import type { ApnsCredentials, AppCreate, AppRotate, AppUpdate, FcmCredentials, Platform } from '@herald/contracts';
import { createAppRepository, type AppRow } from './app-repository.ts';
import type { HeraldTables } from './tables.ts';
import { SecretBoxError, type SecretBox } from './secret-box.ts';

/** Thrown for an admin change that cannot apply (unknown app, app exists, no secret key). */
export class AppAdminError extends Error {
  override readonly name = 'AppAdminError';
  constructor(
    readonly code: 'unknown-app' | 'app-exists' | 'no-secret-key' | 'invalid-credentials',
    message: string,
  ) {
    super(message);
  }
}

/** Add, update, disable apps and rotate their credentials (secrets sealed), and read them back for pushers. */
export interface AppCredentialStore {
  create(input: AppCreate): Promise<AppRow>;
  update(id: string, changes: AppUpdate): Promise<AppRow>;
  rotate(id: string, credentials: AppRotate): Promise<AppRow>;
  /** Decrypted credentials for a pusher, or undefined when the app has none for that platform. */
  readApns(id: string): Promise<ApnsCredentials | undefined>;
  readFcm(id: string): Promise<FcmCredentials | undefined>;
}

const context = (platform: Platform, app: string): string => `${platform}:${app}`;

function apnsColumns(app: string, c: ApnsCredentials, box: SecretBox) {
  const secret = c.auth === 'token' ? { keyPem: c.keyPem } : { certPem: c.certPem, keyPem: c.keyPem, passphrase: c.passphrase };
  return {
    apns_auth: c.auth,
    apns_key_id: c.auth === 'token' ? c.keyId : null,
    apns_team_id: c.auth === 'token' ? c.teamId : null,
    apns_endpoint: c.endpoint,
    apns_secret: box.seal(JSON.stringify(secret), context('apns', app)),
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
  return { fcm_auth: c.auth, fcm_endpoint: c.endpoint, fcm_project_id: fcmProjectOf(c), fcm_secret: box.seal(secret, context('fcm', app)) };
}

function need(box: SecretBox | undefined): SecretBox {
  if (box === undefined) throw new AppAdminError('no-secret-key', 'HERALD_SECRET_KEY is not set: credentials cannot be stored or read');
  return box;
}

function credentialColumns(id: string, c: { apns?: ApnsCredentials | undefined; fcm?: FcmCredentials | undefined }, box: SecretBox | undefined) {
  return {
    ...(c.apns !== undefined ? apnsColumns(id, c.apns, need(box)) : {}),
    ...(c.fcm !== undefined ? fcmColumns(id, c.fcm, need(box)) : {}),
  };
}

async function selectApp(db: Kysely<HeraldTables>, id: string): Promise<AppRow> {
  const row = await createAppRepository(db).get(id);
  if (row === undefined) throw new AppAdminError('unknown-app', `unknown app "${id}"`);
  return row;
}

export function createAppCredentialStore(db: Kysely<HeraldTables>, box: SecretBox | undefined): AppCredentialStore {
  const open = (envelope: string, platform: Platform, id: string): string => {
    try {
      return need(box).open(envelope, context(platform, id));
    } catch (err) {
      throw err instanceof SecretBoxError ? new SecretBoxError(`app "${id}" ${platform} credentials: ${err.message}`) : err;
    }
  };
  return {
    async create(input) {
      const columns = credentialColumns(input.id, input, box);
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
      const set = {
        ...(changes.apnsTopic !== undefined ? { apns_topic: changes.apnsTopic } : {}),
        ...(changes.enabled !== undefined ? { enabled: changes.enabled } : {}),
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
      const r = await db.selectFrom('apps').select(['apns_auth', 'apns_key_id', 'apns_team_id', 'apns_endpoint', 'apns_secret']).where('id', '=', id).executeTakeFirst();
      if (r?.apns_auth == null || r.apns_secret === null) return undefined;
      const secret = JSON.parse(open(r.apns_secret, 'apns', id)) as { keyPem: string; certPem?: string; passphrase?: string };
      if (r.apns_auth === 'token') {
        return { auth: 'token', keyPem: secret.keyPem, keyId: r.apns_key_id ?? '', teamId: r.apns_team_id ?? '', endpoint: r.apns_endpoint };
      }
      return { auth: 'certificate', certPem: secret.certPem ?? '', keyPem: secret.keyPem, ...(secret.passphrase !== undefined && { passphrase: secret.passphrase }), endpoint: r.apns_endpoint };
    },
    async readFcm(id) {
      const r = await db.selectFrom('apps').select(['fcm_auth', 'fcm_endpoint', 'fcm_project_id', 'fcm_secret']).where('id', '=', id).executeTakeFirst();
      if (r?.fcm_auth == null || r.fcm_secret === null || r.fcm_project_id === null) return undefined;
      const secret = open(r.fcm_secret, 'fcm', id);
      return r.fcm_auth === 'access-token'
        ? { auth: 'access-token', accessToken: secret, projectId: r.fcm_project_id, endpoint: r.fcm_endpoint }
        : { auth: 'service-account', serviceAccountJson: secret, projectId: r.fcm_project_id, endpoint: r.fcm_endpoint };
    },
  };
}
