import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deviceTokenProblem } from './device-token.ts';
import { DEFAULT_WEB_PUSH_HOSTS, WEB_PUSH_MAX_PLAINTEXT_BYTES, WEB_PUSH_TOPIC, WebPushKeys, hostAllowed, webEndpointProblem } from './web-push.ts';
import { pushServiceOf } from './web-subscription.ts';

/** Keys as a browser's PushSubscription.toJSON() gives them: an uncompressed P-256 point and 16 random bytes. */
function browserKeys(): { p256dh: string; auth: string } {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const jwk = publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]);
  return { p256dh: point.toString('base64url'), auth: randomBytes(16).toString('base64url') };
}

const issuesOf = (value: unknown): string[] => {
  const r = WebPushKeys.safeParse(value);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('Web Push subscriptions', () => {
  it('accepts the keys a browser gives, with or without base64 padding', () => {
    const keys = browserKeys();
    expect(issuesOf(keys)).toEqual([]);
    expect(issuesOf({ p256dh: `${keys.p256dh}=`, auth: `${keys.auth}==` })).toEqual([]);
  });

  it('refuses keys of the wrong alphabet, length or point form, naming the key', () => {
    const keys = browserKeys();
    expect(issuesOf({ ...keys, auth: keys.auth.replace(/.$/, '+') })).toEqual([expect.stringMatching(/^auth: auth must be base64url/)]);
    expect(issuesOf({ ...keys, auth: randomBytes(12).toString('base64url') })).toEqual(['auth: auth must decode to 16 bytes, got 12']);
    expect(issuesOf({ ...keys, p256dh: randomBytes(33).toString('base64url') })).toEqual(['p256dh: p256dh must decode to 65 bytes, got 33']);
    const compressedish = Buffer.from(keys.p256dh, 'base64url');
    compressedish[0] = 0x02;
    expect(issuesOf({ ...keys, p256dh: compressedish.toString('base64url') })).toEqual([expect.stringMatching(/^p256dh: .*uncompressed P-256 point/)]);
    expect(issuesOf({ ...keys, extra: 'x' })).not.toEqual([]);
  });

  it('takes only https endpoints without credentials or fragments, as the device token of platform web', () => {
    expect(webEndpointProblem('https://fcm.googleapis.com/fcm/send/abc:APA91b')).toBeUndefined();
    expect(deviceTokenProblem('web', 'https://updates.push.services.mozilla.com/wpush/v2/gAAAA')).toBeUndefined();
    expect(webEndpointProblem('http://fcm.googleapis.com/fcm/send/x')).toMatch(/expected an https URL, got http/);
    expect(webEndpointProblem('not a url')).toMatch(/expected an https URL/);
    expect(webEndpointProblem('https://user:pw@push.example/x')).toMatch(/credentials/);
    expect(webEndpointProblem('https://push.example/x#y')).toMatch(/fragment/);
    expect(webEndpointProblem(`https://push.example/${'a'.repeat(2048)}`)).toMatch(/at most 2048/);
  });

  it('matches push-service hosts exactly or by "*." subdomain', () => {
    expect(hostAllowed('fcm.googleapis.com', DEFAULT_WEB_PUSH_HOSTS)).toBe(true);
    expect(hostAllowed('wns2-by3p.notify.windows.com', DEFAULT_WEB_PUSH_HOSTS)).toBe(true);
    expect(hostAllowed('notify.windows.com', DEFAULT_WEB_PUSH_HOSTS)).toBe(false);
    expect(hostAllowed('evil-fcm.googleapis.com.example', DEFAULT_WEB_PUSH_HOSTS)).toBe(false);
    expect(hostAllowed('127.0.0.1', DEFAULT_WEB_PUSH_HOSTS)).toBe(false);
  });

  it('knows RFC 8030 topics and the aes128gcm plaintext bound', () => {
    expect(WEB_PUSH_TOPIC.test('a'.repeat(32))).toBe(true);
    expect(WEB_PUSH_TOPIC.test('a'.repeat(33))).toBe(false);
    expect(WEB_PUSH_TOPIC.test('score:42')).toBe(false);
    expect(WEB_PUSH_MAX_PLAINTEXT_BYTES).toBe(3993);
  });
});

describe('the push service of an endpoint (what a push service\'s pause or overload holds back)', () => {
  it('is the allow-list entry for a wildcard: the regional hosts of WNS are one service, however many an endpoint names', () => {
    const services = ['wns2-by3p', 'wns2-par02p', `x${'a'.repeat(40)}`].map((h) => pushServiceOf(`https://${h}.notify.windows.com/w/?token=AQE`, null));
    expect(services).toEqual(['*.notify.windows.com', '*.notify.windows.com', '*.notify.windows.com']);
  });

  it("is the endpoint's host name for a host the list names itself (Safari's web.push.apple.com before *.push.apple.com), whatever its port", () => {
    expect(pushServiceOf('https://web.push.apple.com/QGuQyavXutnMlpqjIMNzZ0', null)).toBe('web.push.apple.com');
    expect(pushServiceOf('https://api.push.apple.com/x', null)).toBe('*.push.apple.com');
    expect(pushServiceOf('https://updates.push.services.mozilla.com/wpush/v2/gAAAA', null)).toBe('updates.push.services.mozilla.com');
    expect(pushServiceOf('http://127.0.0.1:8443/push/1', ['127.0.0.1'])).toBe('127.0.0.1');
    expect(pushServiceOf('https://fcm.googleapis.com:8443/fcm/send/x', null)).toBe('fcm.googleapis.com');
    expect(pushServiceOf('https://push.EXAMPLE.com/1', ['*.Example.com'])).toBe('*.example.com');
    expect(pushServiceOf('not a url', null)).toBeUndefined();
  });
});
