import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { DevicePush, PushJob } from '@herald/contracts';
import type { TargetDevice } from '@herald/db';
import { describe, expect, it } from 'vitest';
import { devicePushesFor } from './fan-out.ts';

const point = () => {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]).toString('base64url');
};

describe('fan-out to a browser', () => {
  it("copies a web device's subscription keys and server key into its DevicePush; a phone's push has none", () => {
    const job = PushJob.parse({ id: 'j1', app: 'site', userId: 'u1', category: 'news', content: { title: 'hi' } });
    const webKeys = { p256dh: point(), auth: randomBytes(16).toString('base64url') };
    const base = { userId: 'u1', app: 'site', tokenKind: 'device', timezone: null, locale: null } as const;
    const devices: TargetDevice[] = [
      { ...base, deviceId: '1', platform: 'web', token: 'https://fcm.googleapis.com/fcm/send/x', webKeys, webVapidKey: point() },
      { ...base, deviceId: '2', platform: 'apns', token: 'ab'.repeat(32) },
    ];
    const [web, apns] = devicePushesFor(job, devices, new Date('2025-06-01T00:00:00Z'), new Date('2025-06-01T00:00:01Z')).map((p) => DevicePush.parse(p));
    expect(web).toMatchObject({ platform: 'web', webKeys, webVapidKey: devices[0]?.webVapidKey });
    expect(apns).not.toHaveProperty('webKeys');
    expect(apns).not.toHaveProperty('webVapidKey');
  });
});
