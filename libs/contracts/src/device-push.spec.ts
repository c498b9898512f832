import { describe, expect, it } from 'vitest';
import { DevicePush, derivePushId } from './device-push.ts';
import { p256PointProblem } from './web-push.ts';

describe('derivePushId', () => {
  // Ids already in ledgers and at APNs (apns-id) must not change between versions: a job replayed
  // after an upgrade has to be recognised as the same pushes. These values come from the first
  // implementation (createHash('sha256').update(jobId).update('\0').update(deviceId)).
  it('gives the same ids as every earlier version', () => {
    expect(derivePushId('job-1', 'device-1')).toBe('34092140-bfff-85a9-9832-b24679ab884b');
    expect(derivePushId('spring-sale', 'dëvice-é🙂')).toBe('7ba67476-4bbf-8372-9ef5-29a5c66f0133');
    expect(derivePushId('', '')).toBe('6e340b9c-ffb3-8a98-9ca5-44e6bb780a2c');
  });

  it('is a UUID of version 8 with the RFC 9562 variant', () => {
    for (let i = 0; i < 50; i++) expect(derivePushId(`job-${i}`, `d-${i}`)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('keeps the job and the device apart (the separator is part of the hash)', () => {
    expect(derivePushId('ab', 'c')).not.toBe(derivePushId('a', 'bc'));
  });
});

describe('DevicePush: a web push', () => {
  const keys = { p256dh: Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString('base64url'), auth: Buffer.alloc(16, 1).toString('base64url') };
  const push = (webKeys: object) => ({
    version: 1, pushId: derivePushId('j', '1'), jobId: 'j', deviceId: '1', app: 'demo', platform: 'web', token: 'https://push.example.com/s/1',
    webKeys, userId: 'u', content: { title: 'Hi' }, priority: 'high', acceptedAt: new Date().toISOString(),
  });

  it("decodes with a p256dh off the curve (stored before the doors checked it): the provider finds it unusable and invalidates the subscription, not a schema park per job", () => {
    expect(p256PointProblem(Buffer.from(keys.p256dh, 'base64url'))).toBe('is not a point on the P-256 curve');
    expect(DevicePush.safeParse(push(keys)).success).toBe(true);
  });

  it('refuses keys of the wrong shape, naming the field', () => {
    const short = DevicePush.safeParse(push({ ...keys, p256dh: Buffer.alloc(64, 7).toString('base64url') }));
    expect(short.success).toBe(false);
    expect(short.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual(['webKeys.p256dh: p256dh must decode to 65 bytes, got 64']);
    expect(DevicePush.safeParse(push({ ...keys, auth: 'not base64url!' })).success).toBe(false);
  });
});
