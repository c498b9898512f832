import { applicationServerKeyProblem, DeviceRegister, DeviceUnregister, endpointHostProblem, type Registration } from '@herald/contracts';
import type { ApiKeyRow, AppRow } from '@herald/db';
import { ApiError, parseBody } from './api-error.ts';
import { checkApp } from './job-service.ts';

export interface DeviceServiceDeps {
  /** `refresh` (the app cache's) reads the app again before a key it may have got a second ago is refused. */
  apps: { get(id: string): Promise<AppRow | undefined>; refresh?(id: string): Promise<AppRow | undefined> };
  /** Resolves once RabbitMQ confirmed the registration (the client library's publishRegistration). */
  publishRegistration(registration: Registration): Promise<unknown>;
  now?: () => Date;
}

/** POST /v1/devices: validate with the Registration contract, check the app, publish to push.registrations. */
export async function registerDevice(body: unknown, key: ApiKeyRow, deps: DeviceServiceDeps): Promise<void> {
  const d = parseBody(DeviceRegister, body);
  const app = await checkApp(deps, key, d.app);
  if (d.platform === 'web') await checkSubscription(d, body, app, deps);
  await deps.publishRegistration({ ...d, version: 1, kind: 'register', eventAt: d.eventAt ?? (deps.now?.() ?? new Date()).toISOString() });
}

const refuse = (path: string, problem: string): ApiError => new ApiError(400, 'invalid-request', `${path}: ${problem}`, [{ path, message: problem }]);

/**
 * A subscription's push service must be on the app's allow-list (apps.web_push_hosts, default
 * DEFAULT_WEB_PUSH_HOSTS), and its applicationServerKey one of the app's VAPID keys when it has
 * any (applicationServerKeyProblem; a key unknown to the cached app is checked again against the app as stored).
 */
async function checkSubscription(d: { token: string; applicationServerKey?: string | undefined }, body: unknown, app: AppRow, deps: DeviceServiceDeps): Promise<void> {
  const host = endpointHostProblem(d.token, app.webPushHosts);
  if (host !== undefined) throw refuse(typeof body === 'object' && body !== null && 'subscription' in body ? 'subscription.endpoint' : 'token', host);
  if (applicationServerKeyProblem(d.applicationServerKey, app) === undefined) return;
  const problem = applicationServerKeyProblem(d.applicationServerKey, (await deps.apps.refresh?.(app.id)) ?? app);
  if (problem !== undefined) throw refuse('applicationServerKey', problem);
}

/** DELETE /v1/devices. */
export async function unregisterDevice(body: unknown, key: ApiKeyRow, deps: DeviceServiceDeps): Promise<void> {
  const d = parseBody(DeviceUnregister, body);
  // A logout while the app is disabled still ends the device's tie to its user.
  await checkApp(deps, key, d.app, true);
  await deps.publishRegistration({ ...d, version: 1, kind: 'unregister', eventAt: d.eventAt ?? (deps.now?.() ?? new Date()).toISOString() });
}
