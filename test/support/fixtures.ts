import { randomBytes, randomUUID } from 'node:crypto';
import { DEFAULT_PUSH_PACK_SIZE } from '@herald/config';
import type { Platform, PushJobInput, TokenKind } from '@herald/contracts';
import { waitFor } from '@herald/testing';
import { DEMO_APP, type System } from './system.ts';

export const apnsToken = (): string => randomBytes(32).toString('hex');
export const fcmToken = (): string => `${randomBytes(11).toString('base64url')}:APA91b${randomBytes(60).toString('base64url')}`;
/** A phone's platform; a browser (web) device needs a subscription with keys (test/support/web-push-apps.ts, the sandbox's createWebSubscription). */
export type PhonePlatform = Exclude<Platform, 'web'>;
export const tokenFor = (platform: PhonePlatform): string => (platform === 'apns' ? apnsToken() : fcmToken());
/** Most device pushes a send-queue message carries in this run: the environment's PUSH_PACK_SIZE, else the default (ADR 0016). */
export const pushPackSize = (): number => Number(process.env['PUSH_PACK_SIZE'] ?? DEFAULT_PUSH_PACK_SIZE);
export const uniqueUser = (label = 'user'): string => `${label}-${randomUUID().slice(0, 8)}`;

export interface Device {
  userId: string;
  platform: Platform;
  token: string;
  /** APNs VoIP / Live Activity tokens; default `device`. */
  tokenKind?: TokenKind;
}

/** Register devices through the Registrar (as apps do) and wait until it has stored them. */
export async function registerDevices(sys: System, devices: readonly Device[], extra: { timezone?: string } = {}): Promise<void> {
  await Promise.all(
    devices.map((d) =>
      sys.client.publishRegistration({
        kind: 'register',
        app: DEMO_APP.id,
        platform: d.platform,
        token: d.token,
        userId: d.userId,
        ...(d.tokenKind !== undefined && { tokenKind: d.tokenKind }),
        ...extra,
        eventAt: new Date().toISOString(),
      }),
    ),
  );
  const users = [...new Set(devices.map((d) => d.userId))];
  await waitFor(`${devices.length} registered devices`, async () => {
    const found = await sys.database.db.devices.findTargets([{ key: 'k', app: DEMO_APP.id, userIds: users, category: '__none__' }], new Date());
    const tokens = new Set((found.get('k') ?? []).map((t) => t.token));
    return devices.every((d) => tokens.has(d.token));
  });
}

export async function deviceIdOf(sys: System, device: Device): Promise<string> {
  const found = await sys.database.db.devices.findTargets([{ key: 'k', app: DEMO_APP.id, userIds: [device.userId], category: '__none__' }], new Date());
  const row = (found.get('k') ?? []).find((t) => t.token === device.token);
  if (row === undefined) throw new Error(`device ${device.token} not registered`);
  return row.deviceId;
}

export const job = (overrides: Partial<PushJobInput>): PushJobInput => ({
  id: randomUUID(),
  app: DEMO_APP.id,
  category: 'social',
  content: { title: 'Hello', body: 'A friend liked your photo' },
  ...overrides,
});
