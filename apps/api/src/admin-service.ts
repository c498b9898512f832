import { ApiKeyCreate, AppCreate, AppRotate, AppUpdate, OperatorKeyCreate, type AppView, type OperatorKeyCreated } from '@herald/contracts';
import { AppAdminError, type ApiKeyRepository, type AppCredentialStore, type AppRow, type AuditLog, type ConnectionSummary, type VapidKeyPair } from '@herald/db';
import { ApiError, parseBody } from './api-error.ts';

export interface AdminDeps {
  store: AppCredentialStore;
  list(): Promise<AppRow[]>;
  keys: Pick<ApiKeyRepository, 'create' | 'revoke' | 'createOperator' | 'findOperatorByKey'>;
  /** Every admin write is recorded: who (operator key or the bootstrap admin key), what, when. */
  audit: AuditLog;
  /** A new VAPID key pair (web-push's generateVAPIDKeys, through @herald/providers). */
  generateVapidKeys(): Promise<VapidKeyPair>;
}

const NO_CONNECTION: ConnectionSummary = { host: null, port: null, ca: false, proxy: false };
const apnsConnectionView = ({ host, port, ca, proxy }: ConnectionSummary = NO_CONNECTION) => ({ address: host, port, ca, proxy });
const fcmConnectionView = ({ host, port, ca, proxy }: ConnectionSummary = NO_CONNECTION) => ({ host, port, ca, proxy });

/** What an app looks like from outside: never a secret (the CA bundle and the proxy URL only as set or not). */
export const appView = (a: AppRow): AppView => ({
  id: a.id,
  apnsTopic: a.apnsTopic,
  fcmProjectId: a.fcmProjectId,
  enabled: a.enabled,
  apnsAuth: a.apnsAuth ?? null,
  apnsEndpoint: a.apnsEndpoint ?? 'development',
  apnsCertificateExpiresAt: a.apnsCertificateExpiresAt?.toISOString() ?? null,
  fcmAuth: a.fcmAuth ?? null,
  fcmEndpoint: a.fcmEndpoint ?? 'google',
  apnsConnection: apnsConnectionView(a.apnsConnection),
  fcmConnection: fcmConnectionView(a.fcmConnection),
  credentialsVersion: a.credentialsVersion ?? 0,
  webVapidPublicKey: a.webVapidPublicKey ?? null,
  updatedAt: a.updatedAt.toISOString(),
});

const STATUS: Record<AppAdminError['code'], number> = {
  'unknown-app': 404,
  'app-exists': 409,
  'no-secret-key': 503,
  'invalid-credentials': 400,
  'invalid-connection': 400,
  'vapid-exists': 409,
  'no-vapid': 409,
  'previous-vapid-in-use': 409,
};

export async function admin<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppAdminError) throw new ApiError(STATUS[err.code], err.code, err.message);
    throw err;
  }
}

export const createApp = (body: unknown, d: AdminDeps) => admin(async () => appView(await d.store.create(parseBody(AppCreate, body))));
export const updateApp = (id: string, body: unknown, d: AdminDeps) => admin(async () => appView(await d.store.update(id, parseBody(AppUpdate, body))));
export const setEnabled = (id: string, enabled: boolean, d: AdminDeps) => admin(async () => appView(await d.store.update(id, { enabled })));
export const rotateApp = (id: string, body: unknown, d: AdminDeps) => admin(async () => appView(await d.store.rotate(id, parseBody(AppRotate, body))));
export const listApps = async (d: AdminDeps) => (await d.list()).map(appView);

/**
 * A team key for apps that exist (or "*"), as the CLI's `herald keys create`: a key for an app not
 * yet added would gain that app's whole API the day an app takes the id, and one for a mistyped id
 * would act for nothing, silently.
 */
export async function createKey(body: unknown, d: AdminDeps) {
  const input = parseBody(ApiKeyCreate, body);
  const known = new Set((await d.list()).map((a) => a.id));
  const unknown = input.apps.flatMap((app, i) => (app === '*' || known.has(app) ? [] : [{ path: `apps.${i}`, message: `unknown app "${app}" (add it first: POST /admin/apps)` }]));
  if (unknown.length > 0) throw new ApiError(422, 'unknown-app', unknown.map((u) => `${u.path}: ${u.message}`).join('; '), unknown);
  const { key, row } = await d.keys.create(input.team, input.apps);
  return { id: row.id, key, team: row.team, apps: row.apps };
}

export async function createOperatorKey(body: unknown, d: AdminDeps): Promise<OperatorKeyCreated> {
  const input = parseBody(OperatorKeyCreate, body);
  const { key, row } = await d.keys.createOperator(input.name);
  return { id: row.id, key, name: row.team, kind: 'operator' };
}
