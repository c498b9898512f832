import { describe, expect, it } from 'vitest';
import { deviceTokenProblem, normalizeDeviceToken } from './device-token.ts';
import { parseWith } from './parse.ts';
import { Registration } from './registration.ts';

describe('device tokens', () => {
  it('APNs: even-length hex of 64–200 characters, either case', () => {
    expect(deviceTokenProblem('apns', 'ab'.repeat(32))).toBeUndefined();
    expect(deviceTokenProblem('apns', 'AB'.repeat(100))).toBeUndefined();
    expect(deviceTokenProblem('apns', 'a'.repeat(65))).toMatch(/even-length hexadecimal/);
    expect(deviceTokenProblem('apns', 'ab'.repeat(31))).toMatch(/64–200/);
    expect(deviceTokenProblem('apns', 'ab'.repeat(101))).toMatch(/64–200/);
    expect(deviceTokenProblem('apns', 'zz'.repeat(32))).toMatch(/not an APNs device token/);
  });

  it('FCM: letters, digits, "-", "_" and ":", 32–4096 characters', () => {
    expect(deviceTokenProblem('fcm', `cXyz-_:APA91b${'Q'.repeat(140)}`)).toBeUndefined();
    expect(deviceTokenProblem('fcm', 'short')).toMatch(/32–4096/);
    expect(deviceTokenProblem('fcm', `${'a'.repeat(40)}/x`)).toMatch(/including "\/"/);
  });

  it("refuses to register an APNs device token as FCM's (an iOS app sending Apple's token instead of Firebase's), and still takes its unregister", () => {
    const hex = 'ab'.repeat(32);
    const register = parseWith(Registration, { kind: 'register', app: 'demo', platform: 'fcm', token: hex, userId: 'u', eventAt: '2026-01-01T00:00:00Z' });
    expect(register.ok ? '' : register.reason).toMatch(/^schema violation: token: not an FCM registration token: 64 hexadecimal characters is an APNs device token/);
    expect(parseWith(Registration, { kind: 'register', app: 'demo', platform: 'apns', token: hex, userId: 'u', eventAt: '2026-01-01T00:00:00Z' }).ok).toBe(true);
    expect(parseWith(Registration, { kind: 'unregister', app: 'demo', platform: 'fcm', token: hex, eventAt: '2026-01-01T00:00:00Z' }).ok).toBe(true);
    // A push to a device registered so before is still a valid push (FCM's answer marks it dead).
    expect(deviceTokenProblem('fcm', hex)).toBeUndefined();
  });

  it.each([
    ['apns', 'not a token'],
    ['apns', '../x'],
    ['fcm', 'not a token'],
    ['fcm', '../x'],
  ] as const)('a %s registration with %j is refused on token', (platform, token) => {
    const r = parseWith(Registration, { kind: 'register', app: 'demo', platform, token, userId: 'u', eventAt: '2026-01-01T00:00:00Z' });
    expect(r.ok ? '' : r.reason).toMatch(/^schema violation: token: not an/);
  });

  it('a register may name its previousToken: a token of its platform, not the token itself (APNs hex in either case is one token); an unregister may not', () => {
    const event = { kind: 'register', app: 'demo', platform: 'apns', token: 'ab'.repeat(32), userId: 'u', eventAt: '2026-01-01T00:00:00Z' } as const;
    const reason = (value: object) => {
      const r = parseWith(Registration, value);
      return r.ok ? r.value : r.reason;
    };
    expect(reason({ ...event, previousToken: 'cd'.repeat(32) })).toMatchObject({ previousToken: 'cd'.repeat(32) });
    expect(reason({ ...event, previousToken: 'not a token' })).toMatch(/^schema violation: previousToken: previousToken is not an APNs device token: /);
    expect(reason({ ...event, previousToken: 'ab'.repeat(32) })).toMatch(/^schema violation: previousToken: previousToken is the token itself/);
    expect(reason({ ...event, previousToken: 'AB'.repeat(32) })).toMatch(/^schema violation: previousToken: previousToken is the token itself/);
    expect(reason({ ...event, previousToken: '' })).toMatch(/^schema violation: previousToken: /);
    // FCM tokens are case-sensitive; one of an APNs token's shape (registered before that was refused) may be named.
    const fcm = `cXyz-_:APA91b${'Q'.repeat(40)}`;
    expect(reason({ ...event, platform: 'fcm', token: fcm, previousToken: fcm.toLowerCase() })).toMatchObject({ previousToken: fcm.toLowerCase() });
    expect(reason({ ...event, platform: 'fcm', token: fcm, previousToken: 'ab'.repeat(32) })).toMatchObject({ previousToken: 'ab'.repeat(32) });
    expect(reason({ ...event, platform: 'fcm', token: fcm, previousToken: fcm })).toMatch(/^schema violation: previousToken: previousToken is the token itself/);
    expect(reason({ ...event, platform: 'fcm', token: fcm, previousToken: 'a/b' })).toMatch(/^schema violation: previousToken: previousToken is not an FCM registration token: /);
    expect(reason({ kind: 'unregister', app: 'demo', platform: 'apns', token: 'ab'.repeat(32), previousToken: 'cd'.repeat(32), eventAt: '2026-01-01T00:00:00Z' })).toMatch(/previousToken/);
  });

  it('stores APNs tokens in lower case, FCM tokens as given', () => {
    expect(normalizeDeviceToken('apns', 'AB'.repeat(32))).toBe('ab'.repeat(32));
    expect(normalizeDeviceToken('fcm', 'AbC')).toBe('AbC');
  });
});
