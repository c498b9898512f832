import { DeviceRegister, DeviceUnregister, type Registration } from '@herald/contracts';
import type { ApiKeyRow, AppRow } from '@herald/db';
import { parseBody } from './api-error.ts';
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
  await checkApp(deps, key, d.app);
  await deps.publishRegistration({ ...d, version: 1, kind: 'register', eventAt: d.eventAt ?? (deps.now?.() ?? new Date()).toISOString() });
}

/** DELETE /v1/devices. */
export async function unregisterDevice(body: unknown, key: ApiKeyRow, deps: DeviceServiceDeps): Promise<void> {
  const d = parseBody(DeviceUnregister, body);
  await checkApp(deps, key, d.app);
  await deps.publishRegistration({ ...d, version: 1, kind: 'unregister', eventAt: d.eventAt ?? (deps.now?.() ?? new Date()).toISOString() });
}
