import { DeviceRegister, DeviceUnregister, endpointHostProblem, type Registration } from '@herald/contracts';
import type { ApiKeyRow, AppRow } from '@herald/db';
import { ApiError, parseBody } from './api-error.ts';
import { checkApp } from './job-service.ts';

export interface DeviceServiceDeps {
  apps: { get(id: string): Promise<AppRow | undefined> };
  /** Resolves once RabbitMQ confirmed the registration (the client library's publishRegistration). */
  publishRegistration(registration: Registration): Promise<unknown>;
  now?: () => Date;
}

/** POST /v1/devices: validate with the Registration contract, check the app, publish to push.registrations. */
export async function registerDevice(body: unknown, key: ApiKeyRow, deps: DeviceServiceDeps): Promise<void> {
  const d = parseBody(DeviceRegister, body);
  // A disabled app's register is taken, as its unregister: a registration is state, not a send, and
  // another user's login on the phone during an incident must take the device from the one before.
  const app = await checkApp(deps, key, d.app, true);
  if (d.platform === 'web') checkSubscription(d, body, app);
  await deps.publishRegistration({ ...d, version: 1, kind: 'register', eventAt: d.eventAt ?? (deps.now?.() ?? new Date()).toISOString() });
}

const refuse = (path: string, problem: string): ApiError => new ApiError(400, 'invalid-request', `${path}: ${problem}`, [{ path, message: problem }]);

/**
 * A subscription's push service must be on the app's allow-list (apps.web_push_hosts, default
 * DEFAULT_WEB_PUSH_HOSTS). Its applicationServerKey is not judged: see the registrar's webRefusal.
 */
function checkSubscription(d: { token: string }, body: unknown, app: AppRow): void {
  const host = endpointHostProblem(d.token, app.webPushHosts);
  if (host !== undefined) throw refuse(typeof body === 'object' && body !== null && 'subscription' in body ? 'subscription.endpoint' : 'token', host);
}

/** DELETE /v1/devices. */
export async function unregisterDevice(body: unknown, key: ApiKeyRow, deps: DeviceServiceDeps): Promise<void> {
  const d = parseBody(DeviceUnregister, body);
  // A logout while the app is disabled still ends the device's tie to its user.
  await checkApp(deps, key, d.app, true);
  await deps.publishRegistration({ ...d, version: 1, kind: 'unregister', eventAt: d.eventAt ?? (deps.now?.() ?? new Date()).toISOString() });
}
