import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DeviceRegister, DeviceUnregister } from './http-api.ts';
import { Registration } from './registration.ts';
import { endpointHostProblem } from './web-subscription.ts';
import { VapidGenerate, VapidRotate, WebPushUpdate } from './web-push-admin.ts';

/** A P-256 public key as browsers give it (uncompressed point, base64url). */
function p256(): string {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]).toString('base64url');
}
const endpoint = 'https://fcm.googleapis.com/fcm/send/dGVzdA:APA91b-example';
/** What `PushSubscription.toJSON()` gives in a browser. */
const browserSubscription = () => ({ endpoint, expirationTime: null, keys: { p256dh: p256(), auth: randomBytes(16).toString('base64url') } });
const base = { app: 'chat', platform: 'web', userId: 'u1' } as const;

const issues = (schema: { safeParse(v: unknown): { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } } }, value: unknown) => {
  const r = schema.safeParse(value);
  return r.success ? [] : (r.error?.issues ?? []).map((i) => `${i.path.map(String).join('.')}: ${i.message}`);
};

describe('web registrations at the doors', () => {
  it('takes a browser PushSubscription as is and gives the canonical token (endpoint) and keys', () => {
    const subscription = browserSubscription();
    const parsed = DeviceRegister.parse({ ...base, subscription });
    expect(parsed).toMatchObject({ platform: 'web', token: endpoint, keys: subscription.keys });
    expect(parsed).not.toHaveProperty('subscription');
    // The canonical form is a valid queue message.
    expect(issues(Registration, { ...parsed, kind: 'register', eventAt: '2025-03-01T10:00:00Z' })).toEqual([]);
  });

  it('takes token and keys, and the applicationServerKey the browser subscribed with', () => {
    const { keys } = browserSubscription();
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys, applicationServerKey: p256() })).toEqual([]);
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys, applicationServerKey: 'short' })).toEqual([expect.stringMatching(/^applicationServerKey: must be an uncompressed P-256 public key/)]);
  });

  it('takes an applicationServerKey with the padding a btoa-style encoder leaves, and keeps it as the app spells its keys', () => {
    const { keys } = browserSubscription();
    const key = p256();
    expect(DeviceRegister.parse({ ...base, token: endpoint, keys, applicationServerKey: `${key}=` })).toMatchObject({ applicationServerKey: key });
    expect(Registration.parse({ ...base, kind: 'register', token: endpoint, keys, applicationServerKey: `${key}=`, eventAt: '2025-03-01T10:00:00Z' })).toMatchObject({ applicationServerKey: key });
  });

  it('refuses a bad endpoint, naming the field: not a URL, http, credentials, a fragment', () => {
    const { keys } = browserSubscription();
    expect(issues(DeviceRegister, { ...base, token: 'fcm.googleapis.com/x', keys })).toEqual(['token: not a Web Push endpoint: expected an https URL']);
    expect(issues(DeviceRegister, { ...base, token: 'http://fcm.googleapis.com/x', keys })).toEqual(['token: not a Web Push endpoint: expected an https URL, got http']);
    expect(issues(DeviceRegister, { ...base, token: 'ftp://fcm.googleapis.com/x', keys })).toEqual(['token: not a Web Push endpoint: expected an https URL, got ftp']);
    expect(issues(DeviceRegister, { ...base, token: 'https://u:p@fcm.googleapis.com/x', keys })).toEqual([expect.stringMatching(/^token: .*credentials/)]);
    const sub = { ...browserSubscription(), endpoint: 'http://fcm.googleapis.com/x' };
    expect(issues(DeviceRegister, { ...base, subscription: sub })).toEqual(['subscription.endpoint: not a Web Push endpoint: expected an https URL, got http']);
  });

  it('refuses bad keys, naming each: not base64url, wrong lengths, not an uncompressed point', () => {
    const { keys } = browserSubscription();
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys: { ...keys, auth: 'a+b/c' } })).toEqual([expect.stringMatching(/^keys\.auth: auth must be base64url/)]);
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys: { ...keys, auth: randomBytes(8).toString('base64url') } })).toEqual(['keys.auth: auth must decode to 16 bytes, got 8']);
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys: { ...keys, p256dh: randomBytes(64).toString('base64url') } })).toEqual(['keys.p256dh: p256dh must decode to 65 bytes, got 64']);
    const notPoint = Buffer.concat([Buffer.from([2]), randomBytes(64)]).toString('base64url');
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys: { ...keys, p256dh: notPoint } })).toEqual(['keys.p256dh: p256dh must be an uncompressed P-256 point (65 bytes, first byte 0x04)']);
    // The right length and first byte, but no point on the curve: every send would fail for good.
    const offCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString('base64url');
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys: { ...keys, p256dh: offCurve } })).toEqual(['keys.p256dh: p256dh is not a point on the P-256 curve']);
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys, applicationServerKey: offCurve })).toEqual(['applicationServerKey: is not a point on the P-256 curve']);
    const sub = browserSubscription();
    expect(issues(DeviceRegister, { ...base, subscription: { ...sub, keys: { ...sub.keys, auth: 'x' } } })).toEqual([expect.stringMatching(/^subscription\.keys\.auth: /)]);
  });

  it('a web registration needs its keys; an APNs or FCM one may not carry any', () => {
    const { keys } = browserSubscription();
    expect(issues(DeviceRegister, { ...base, token: endpoint })).toEqual([expect.stringMatching(/^keys: a web registration carries the subscription keys/)]);
    expect(issues(Registration, { ...base, kind: 'register', token: endpoint, eventAt: '2025-03-01T10:00:00Z' })).toEqual([expect.stringMatching(/^keys: /)]);
    const apns = { app: 'chat', platform: 'apns', userId: 'u1', token: 'ab'.repeat(32) };
    expect(issues(DeviceRegister, { ...apns, keys })).toEqual(['keys: keys belong to a Web Push subscription; an APNs registration has none']);
    expect(issues(DeviceRegister, { ...apns, applicationServerKey: p256() })).toEqual([expect.stringMatching(/^applicationServerKey: .*an APNs registration has none/)]);
    expect(issues(DeviceRegister, { ...apns, subscription: browserSubscription() })).toEqual(['subscription: subscription is a Web Push subscription: give platform "web"']);
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys, subscription: browserSubscription() })).toEqual(['subscription: give either subscription or token and keys, not both']);
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys, tokenKind: 'voip' })).toEqual([expect.stringMatching(/^tokenKind: .*a Web Push subscription is always "device"/)]);
  });

  it("takes the old subscription's endpoint as previousToken (pushsubscriptionchange), refusing a bad one or the endpoint itself, naming previousToken", () => {
    const subscription = browserSubscription();
    const old = 'https://fcm.googleapis.com/fcm/send/b2xk:APA91b-old';
    expect(DeviceRegister.parse({ ...base, subscription, previousToken: old })).toMatchObject({ token: endpoint, previousToken: old });
    expect(issues(DeviceRegister, { ...base, token: endpoint, keys: subscription.keys, previousToken: old })).toEqual([]);
    expect(issues(DeviceRegister, { ...base, subscription, previousToken: 'http://fcm.googleapis.com/x' })).toEqual(['previousToken: previousToken is not a Web Push endpoint: expected an https URL, got http']);
    expect(issues(DeviceRegister, { ...base, subscription, previousToken: endpoint })).toEqual([expect.stringMatching(/^previousToken: previousToken is the token itself/)]);
    expect(issues(DeviceRegister, { app: 'chat', platform: 'apns', userId: 'u1', token: 'ab'.repeat(32), previousToken: 'AB'.repeat(32) })).toEqual([expect.stringMatching(/^previousToken: previousToken is the token itself/)]);
    // An unregister names one token: the one signed out of.
    expect(issues(DeviceUnregister, { app: 'chat', platform: 'web', token: endpoint, previousToken: old })).toEqual([expect.stringMatching(/previousToken/)]);
  });

  it('unregisters by endpoint', () => {
    expect(issues(DeviceUnregister, { app: 'chat', platform: 'web', token: endpoint })).toEqual([]);
    expect(issues(DeviceUnregister, { app: 'chat', platform: 'web', token: 'http://x/y' })).toEqual(['token: not a Web Push endpoint: expected an https URL, got http']);
  });

  it('unregisters by PushSubscription.toJSON() as POST registers by it, naming subscription.endpoint', () => {
    const subscription = { endpoint, expirationTime: null, keys: { p256dh: p256(), auth: randomBytes(16).toString('base64url') } };
    expect(DeviceUnregister.parse({ app: 'chat', platform: 'web', subscription })).toEqual({ app: 'chat', platform: 'web', token: endpoint });
    expect(issues(DeviceUnregister, { app: 'chat', platform: 'web', subscription: { ...subscription, endpoint: 'http://x/y' } })).toEqual([
      'subscription.endpoint: not a Web Push endpoint: expected an https URL, got http',
    ]);
    expect(issues(DeviceUnregister, { app: 'chat', platform: 'web', subscription, token: endpoint })).toEqual(['subscription: give either subscription or token, not both']);
    expect(issues(DeviceUnregister, { app: 'chat', platform: 'fcm', subscription })).toEqual(['subscription: subscription is a Web Push subscription: give platform "web"']);
    expect(issues(DeviceUnregister, { app: 'chat', platform: 'web' })).toEqual(['token: give token (the endpoint) or subscription']);
  });
});

describe('push-service allow-list', () => {
  it('accepts the browsers push services by default and an app list when it has one, naming the host otherwise', () => {
    expect(endpointHostProblem(endpoint, null)).toBeUndefined();
    expect(endpointHostProblem('https://web.push.apple.com/QGx', null)).toBeUndefined();
    expect(endpointHostProblem('https://push.example.net/x', null)).toMatch(/^the push service host "push.example.net" is not on the app's allow-list \(fcm.googleapis.com, /);
    expect(endpointHostProblem('https://127.0.0.1:4443/wp/1', ['127.0.0.1'])).toBeUndefined();
    expect(endpointHostProblem(endpoint, ['127.0.0.1'])).toMatch(/"fcm.googleapis.com" is not on the app's allow-list \(127.0.0.1\)/);
  });

  it("refuses a browser push service's endpoint on another port than https's (it answers nothing there, and each push held the web-pusher's batches for its timeout)", () => {
    expect(endpointHostProblem('https://fcm.googleapis.com:81/fcm/send/x', null)).toBe('the push service host "fcm.googleapis.com" takes endpoints on port 443 only, got port 81');
    expect(endpointHostProblem('https://wns2-par02p.notify.windows.com:8443/w/?token=x', null)).toMatch(/takes endpoints on port 443 only, got port 8443$/);
    expect(endpointHostProblem('https://fcm.googleapis.com:443/fcm/send/x', null)).toBeUndefined();
    // A host an operator listed (not one of the browsers') keeps whatever port it names.
    expect(endpointHostProblem('https://push.example.net:8443/x', ['push.example.net'])).toBeUndefined();
  });
});

describe('VAPID admin inputs', () => {
  it('a subject is a mailto: address or an https: URL, named in the error', () => {
    expect(issues(VapidGenerate, { subject: 'mailto:ops@example.com' })).toEqual([]);
    expect(issues(VapidGenerate, { subject: 'https://example.com/contact' })).toEqual([]);
    expect(issues(VapidGenerate, { subject: 'http://example.com' })).toEqual([expect.stringMatching(/^subject: must be a mailto: or https: URL .*got http/)]);
    expect(issues(VapidGenerate, { subject: 'mailto:nobody' })).toEqual([expect.stringMatching(/^subject: .*names an address/)]);
    expect(issues(VapidGenerate, { subject: 'ops@example.com' })).toEqual([expect.stringMatching(/^subject: .*is not a URL/)]);
    // The URL parser forgives these, but the JWT carries the value as given and push services refuse it.
    for (const subject of [' mailto:ops@example.com', 'mailto:ops@example.com ', 'mailto:ops@exa\tmple.com', 'https://example.com/\ncontact']) {
      expect([subject, issues(VapidGenerate, { subject })]).toEqual([subject, [expect.stringMatching(/^subject: must be a mailto: or https: URL .*no spaces or control characters/)]]);
    }
  });

  // Apple's push service answers 403 BadJwtToken to such a subject, which Herald counts towards banning the app.
  it('a subject must be a contact a push service can reach: no localhost, IP literal, single-label or local-only host', () => {
    const refused = {
      'https://localhost': /the host "localhost" is a local name/,
      'https://LOCALHOST./contact': /local name/,
      'https://push.localhost': /local name \(\.localhost\)/,
      'https://127.0.0.1/': /"127\.0\.0\.1" is an IP address/,
      'https://10.1.2.3': /IP address/,
      'https://192.168.0.10:8443/x': /IP address/,
      'https://127.1': /IP address/,
      'https://[::1]/': /IP address/,
      'https://93.184.215.14': /IP address/,
      'https://intranet': /single-label host/,
      'https://herald.internal': /local name/,
      'mailto:ops@localhost': /the address's domain "localhost" is a local name/,
      'mailto:ops@mailhost': /single-label/,
      'mailto:ops@127.0.0.1': /IP address/,
      'mailto:ops@[127.0.0.1]': /IP address/,
      'mailto:ops@example.com,root@localhost': /"localhost"/,
      'mailto:ops@shop.local': /local name \(\.local\)/,
    };
    for (const [subject, why] of Object.entries(refused)) {
      expect([subject, issues(VapidGenerate, { subject })]).toEqual([subject, [expect.stringMatching(/^subject: must be a contact a push service can reach/)]]);
      expect([subject, issues(VapidGenerate, { subject })[0]]).toEqual([subject, expect.stringMatching(why)]);
    }
    for (const subject of ['https://example.com', 'https://push-ops.example.co.uk/contact', 'mailto:ops@example.com', 'mailto:a@b.c', 'mailto:ops@b%C3%BCcher.de', 'https://bücher.de', 'https://example.com.']) {
      expect([subject, issues(VapidGenerate, { subject })]).toEqual([subject, []]);
    }
    expect(issues(VapidRotate, { subject: 'https://localhost' })).toEqual([expect.stringMatching(/^subject: .*"localhost"/)]);
    expect(issues(WebPushUpdate, { subject: 'mailto:ops@localhost' })).toEqual([expect.stringMatching(/^subject: .*"localhost"/)]);
  });

  it('hosts are host names or *.domain entries', () => {
    expect(issues(WebPushUpdate, { hosts: ['127.0.0.1', '*.push.example.com'] })).toEqual([]);
    expect(issues(WebPushUpdate, { hosts: ['https://push.example.com'] })).toEqual([expect.stringMatching(/^hosts\.0: must be a host name/)]);
    expect(issues(WebPushUpdate, { hosts: null })).toEqual([]);
    expect(issues(WebPushUpdate, {})).toEqual(['subject: give subject or hosts']);
  });
});
