import { derivePushId, type DevicePush, type Platform } from '@herald/contracts';

/** Spec helper: a valid DevicePush for one platform, with overrides. */
export const FCM_TOKEN = `cXyz:APA91b${'Q'.repeat(140)}`;
export const APNS_TOKEN = 'ab'.repeat(32);

export function testPush(platform: Platform, over: Partial<DevicePush> = {}): DevicePush {
  return {
    version: 1,
    pushId: derivePushId('job', 'dev'),
    jobId: 'job',
    deviceId: 'dev',
    app: 'demo',
    platform,
    token: platform === 'apns' ? APNS_TOKEN : FCM_TOKEN,
    userId: 'u',
    content: { title: 'Hi' },
    priority: 'high',
    acceptedAt: '2026-01-01T00:00:00Z',
    ...over,
  };
}
