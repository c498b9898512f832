import {
  DEFAULT_WEB_PUSH_HOSTS,
  VapidGenerate,
  VapidPublicKeyQuery,
  VapidRotate,
  vapidGenerateNotice,
  WebPushUpdate,
  type VapidPublicKeyView,
  type WebPushView,
} from '@herald/contracts';
import type { ApiKeyRow, AppRow } from '@herald/db';
import { ApiError, parseBody } from './api-error.ts';
import { admin, type AdminDeps } from './admin-service.ts';
import { requireApp } from './auth.ts';

/** An app's Web Push settings: public keys, subject, hosts; never a private key. */
export const webPushView = (a: AppRow): WebPushView => ({
  app: a.id,
  vapid:
    a.webVapidPublicKey != null && a.webVapidSubject != null
      ? { publicKey: a.webVapidPublicKey, previousPublicKey: a.webVapidPreviousPublicKey ?? null, subject: a.webVapidSubject }
      : null,
  hosts: a.webPushHosts ?? [...DEFAULT_WEB_PUSH_HOSTS],
  defaultHosts: a.webPushHosts == null,
  credentialsVersion: a.credentialsVersion ?? 0,
});

/** GET /admin/apps/:id/web-push */
export async function getWebPush(id: string, deps: WebPushServiceDeps): Promise<WebPushView> {
  const app = await deps.vapidApps.get(id);
  if (app === undefined) throw new ApiError(404, 'unknown-app', `unknown app "${id}"`);
  return webPushView(app);
}

/** POST /admin/apps/:id/vapid: the first key pair. */
export const generateVapid = (id: string, body: unknown, d: AdminDeps) =>
  admin(async () => {
    const { subject } = parseBody(VapidGenerate, body ?? {});
    const row = await d.store.generateVapid(id, { subject, keys: await d.generateVapidKeys() });
    return { ...webPushView(row), notices: [vapidGenerateNotice(id)] };
  });

/** POST /admin/apps/:id/vapid/rotate: a new pair, the current one kept as previous. */
export const rotateVapid = (id: string, body: unknown, d: AdminDeps) =>
  admin(async () => {
    const { subject, force } = parseBody(VapidRotate, body ?? {});
    return webPushView(await d.store.rotateVapid(id, { subject, keys: await d.generateVapidKeys(), force: force === true }));
  });

/** PATCH /admin/apps/:id/web-push: subject and/or hosts. */
export const updateWebPush = (id: string, body: unknown, d: AdminDeps) => admin(async () => webPushView(await d.store.updateWebPush(id, parseBody(WebPushUpdate, body))));

export interface WebPushServiceDeps {
  /** Read fresh (not through the app cache), so a rotation shows at once. */
  vapidApps: { get(id: string): Promise<AppRow | undefined> };
}

/** The app a team key reads for: `?app=`, or the key's only app. */
function appFor(key: ApiKeyRow, query: { app?: string | undefined }): string {
  if (query.app !== undefined) {
    requireApp(key, query.app);
    return query.app;
  }
  const [only, ...more] = key.apps;
  if (only === undefined || only === '*' || more.length > 0) {
    throw new ApiError(400, 'invalid-request', 'this API key acts for more than one app: give ?app=<id>', [{ path: 'app', message: 'required when the key acts for more than one app' }]);
  }
  return only;
}

/** GET /v1/web-push/vapid-public-key: the applicationServerKey a web front end subscribes with. */
export async function vapidPublicKey(rawQuery: unknown, key: ApiKeyRow, deps: WebPushServiceDeps): Promise<VapidPublicKeyView> {
  const id = appFor(key, parseBody(VapidPublicKeyQuery, rawQuery ?? {}));
  const app = await deps.vapidApps.get(id);
  if (app === undefined) throw new ApiError(404, 'unknown-app', `unknown app "${id}"`);
  if (app.webVapidPublicKey == null || app.webVapidSubject == null) {
    throw new ApiError(404, 'no-vapid', `app "${id}" has no VAPID keys yet: an operator generates them (herald apps vapid generate ${id} --subject mailto:...)`);
  }
  return { app: id, publicKey: app.webVapidPublicKey, subject: app.webVapidSubject };
}
