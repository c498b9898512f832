import { MAX_LIST_ROWS, UserOfApp, type DeviceList, type DeviceView } from '@herald/contracts';
import type { ApiKeyRow, UserDevice } from '@herald/db';
import { maskToken } from '@herald/logging';
import { parseBody } from './api-error.ts';
import { requireKnownApp, type PreferenceServiceDeps } from './preference-service.ts';

export interface UserDevicesServiceDeps {
  apps: PreferenceServiceDeps['apps'];
  /** A user's devices of one app, valid and invalidated, newest first, at most `limit`. */
  userDevices(app: string, userId: string, limit: number): Promise<UserDevice[]>;
}

/**
 * What a team sees of a device. The token is masked like in Herald's logs: the team registered it
 * and keeps it; an API key that reads devices must not be a way to collect every user's push tokens.
 */
export const deviceView = (d: UserDevice): DeviceView => ({
  id: d.id,
  app: d.app,
  userId: d.userId,
  platform: d.platform,
  token: maskToken(d.token),
  tokenKind: d.tokenKind,
  timezone: d.timezone,
  locale: d.locale,
  registeredAt: d.registeredAt?.toISOString() ?? null,
  invalidSince: d.invalidatedAt?.toISOString() ?? null,
  invalidReason: d.invalidationReason,
});

/** GET /v1/devices?app=&userId=: the user's devices of the app, valid and invalid. */
export async function listUserDevices(query: unknown, key: ApiKeyRow, deps: UserDevicesServiceDeps): Promise<DeviceList> {
  const q = parseBody(UserOfApp, query);
  await requireKnownApp(deps, key, q.app);
  const rows = await deps.userDevices(q.app, q.userId, MAX_LIST_ROWS + 1);
  return { devices: rows.slice(0, MAX_LIST_ROWS).map(deviceView), truncated: rows.length > MAX_LIST_ROWS };
}
