import { createPrivateKey, sign } from 'node:crypto';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@herald/logging';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type DeliveryView, type Sandbox } from './index.ts';

// The servers' wiring for simulated phones, over real HTTP/2 (client-certificate auth for APNs).
const logger = createLogger({ service: 'offline-int', level: 'silent' });
const TOKEN = 'cd'.repeat(32);
const FCM_TOKEN = 'fcm-offline:APA91bXYZ';
let stateDir: string;
let sandbox: Sandbox;
let apns: http2.ClientHttp2Session;
let fcm: http2.ClientHttp2Session;

function post(session: http2.ClientHttp2Session, headers: Record<string, string>, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'POST', 'content-type': 'application/json', ...headers });
    req.on('response', (h) => resolve(Number(h[':status'])));
    req.on('error', reject);
    req.resume();
    req.end(JSON.stringify(body));
  });
}
const sendApns = (expiration: string) =>
  post(apns, { ':path': `/3/device/${TOKEN}`, 'apns-topic': 'com.example.app', 'apns-push-type': 'alert', 'apns-expiration': expiration }, { aps: { alert: 'hi' } });
const sendFcm = (message: object, validateOnly = false) =>
  post(
    fcm,
    { ':path': `/v1/projects/${sandbox.settings.fcm.projectId}/messages:send`, authorization: `Bearer ${sandbox.settings.fcm.accessToken}` },
    { message: { token: FCM_TOKEN, notification: { title: 't' }, ...message }, ...(validateOnly ? { validate_only: true } : {}) },
  );
const control = async (method: string, path: string, body?: unknown): Promise<unknown> =>
  (await fetch(`${sandbox.settings.control.url}${path}`, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })).json();
/** A provider token signed with the sandbox's own .p8 key, as a token-auth client sends it. */
async function providerToken(): Promise<string> {
  const { keyFile, keyId, teamId } = sandbox.settings.apns;
  const enc = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const data = `${enc({ alg: 'ES256', kid: keyId })}.${enc({ iss: teamId, iat: Math.floor(Date.now() / 1000) })}`;
  const key = createPrivateKey(await readFile(keyFile, 'utf8'));
  return `bearer ${data}.${sign('sha256', Buffer.from(data), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}
const deliveries = async (platform: string, token: string) => (await control('GET', `/devices/deliveries?platform=${platform}&token=${token}`)) as DeliveryView[];

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'herald-offline-'));
  sandbox = await startSandbox({ stateDir, logger });
  const s = sandbox.settings;
  const ca = await readFile(s.apns.caFile);
  const [cert, key] = await Promise.all([readFile(s.apns.clientCertFile), readFile(s.apns.clientKeyFile)]);
  apns = http2.connect(`https://${s.apns.address}:${s.apns.port}`, { ca, cert, key });
  fcm = http2.connect(`https://${s.fcm.host}:${s.fcm.port}`, { ca });
});
afterAll(async () => {
  apns?.close();
  fcm?.close();
  await sandbox?.close();
  await rm(stateDir, { recursive: true, force: true });
});
beforeEach(async () => {
  await control('DELETE', '/devices');
  await control('DELETE', '/faults');
});

describe('simulated phones behind the real servers', () => {
  it('APNs: a push with an expiry reaches a phone that was offline; expiration 0 and refused pushes do not', async () => {
    await control('POST', '/devices/offline', { platform: 'apns', token: TOKEN });
    expect(await sendApns('0')).toBe(200);
    expect(await sendApns(String(Math.floor(Date.now() / 1000) + 3600))).toBe(200);
    await control('POST', '/faults', { platform: 'apns', token: TOKEN, error: 'Unregistered', times: 1 });
    expect(await sendApns(String(Math.floor(Date.now() / 1000) + 3600))).toBe(410);
    expect(await deliveries('apns', TOKEN)).toEqual([]);
    expect(await control('POST', '/devices/online', { platform: 'apns', token: TOKEN })).toMatchObject({ delivered: 1 });
    const [got] = await deliveries('apns', TOKEN);
    expect(got).toMatchObject({ via: 'stored', body: { aps: { alert: 'hi' } } });
    expect(await sendApns('0')).toBe(200);
    expect((await deliveries('apns', TOKEN)).map((d) => d.via)).toEqual(['stored', 'direct']);
  });

  it('FCM: ttl 0s is lost while offline, a ttl is kept; validate_only never reaches the phone', async () => {
    expect(await sendFcm({}, true)).toBe(200);
    expect(await deliveries('fcm', FCM_TOKEN)).toEqual([]);
    await control('POST', '/devices/offline', { platform: 'fcm', token: FCM_TOKEN });
    expect(await sendFcm({ android: { ttl: '0s' } })).toBe(200);
    expect(await sendFcm({ android: { ttl: '600s' } })).toBe(200);
    await control('POST', '/devices/online', { platform: 'fcm', token: FCM_TOKEN });
    const got = await deliveries('fcm', FCM_TOKEN);
    expect(got.map((d) => [d.via, (d.body as { message: { android: { ttl: string } } }).message.android.ttl])).toEqual([['stored', '600s']]);    const discards = (await control('GET', `/devices/discards?platform=fcm&token=${FCM_TOKEN}`)) as { why: string }[];
    expect(discards.map((d) => d.why)).toEqual(['android.ttl 0s: delivered now or never']);
  });

  it('FCM: alerts sent to an offline Android phone collapse to the newest, whatever their collapse_key', async () => {
    await control('POST', '/devices/offline', { platform: 'fcm', token: FCM_TOKEN });
    for (const key of ['a', 'b', 'c']) expect(await sendFcm({ notification: { title: key }, android: { collapse_key: key } })).toBe(200);
    expect(await control('POST', '/devices/online', { platform: 'fcm', token: FCM_TOKEN })).toMatchObject({ delivered: 1 });
    const got = await deliveries('fcm', FCM_TOKEN);
    expect(got.map((d) => [d.via, (d.body as { message: { notification: { title: string } } }).message.notification.title])).toEqual([['stored', 'c']]);
  });

  it('APNs: a goaway fault closes the connection as Apple documents a GOAWAY (JSON with a reason key), and its request is still answered', async () => {
    const s = sandbox.settings;
    const [ca, cert, key] = await Promise.all([readFile(s.apns.caFile), readFile(s.apns.clientCertFile), readFile(s.apns.clientKeyFile)]);
    const own = http2.connect(`https://${s.apns.address}:${s.apns.port}`, { ca, cert, key });
    try {
      const goaway = new Promise<{ code: number; data: string }>((resolve) => own.once('goaway', (code, _last, data) => resolve({ code, data: data?.toString() ?? '' })));
      await control('POST', '/faults', { platform: 'apns', token: TOKEN, error: 'ServiceUnavailable', goaway: true, times: 1 });
      expect(await post(own, { ':path': `/3/device/${TOKEN}`, 'apns-topic': 'com.example.app', 'apns-push-type': 'alert' }, { aps: { alert: 'hi' } })).toBe(503);
      expect(await goaway).toEqual({ code: http2.constants.NGHTTP2_NO_ERROR, data: '{"reason":"ServiceUnavailable"}' });
    } finally {
      own.close();
    }
  });

  it("APNs over the client certificate: Apple's current certificate has several topics (the app, VoIP, complication), so a push without apns-topic is MissingTopic, as with a provider token", async () => {
    const path = `/3/device/${TOKEN}`;
    const last = async () => ((await control('GET', `/records?platform=apns&token=${TOKEN}&limit=1`)) as { response: unknown; warnings: string[] }[])[0];
    expect(await post(apns, { ':path': path, 'apns-push-type': 'alert' }, { aps: { alert: 'hi' } })).toBe(400);
    expect((await last())?.response).toEqual({ reason: 'MissingTopic' });
    expect(await post(apns, { ':path': path, 'apns-push-type': 'alert', authorization: await providerToken() }, { aps: { alert: 'hi' } })).toBe(400);
    expect((await last())?.response).toEqual({ reason: 'MissingTopic' });
    expect(await post(apns, { ':path': path, 'apns-topic': 'com.herald.sandbox', 'apns-push-type': 'alert' }, { aps: { alert: 'hi' } })).toBe(200);
  });

  it('APNs: a collapse id counts bytes as they arrive: 64 bytes of UTF-8 are taken, 66 refused', async () => {
    // Node's client sends each character's low byte: this string is the UTF-8 of "€" x 21 + "x".
    const utf8 = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');
    const send = (collapseId: string) => post(apns, { ':path': `/3/device/${TOKEN}`, 'apns-topic': 'com.example.app', 'apns-push-type': 'alert', 'apns-collapse-id': collapseId }, { aps: { alert: 'hi' } });
    expect(await send(utf8(`${'€'.repeat(21)}x`))).toBe(200);
    expect(await send(utf8('€'.repeat(22)))).toBe(400);
  });

  it('APNs: a background push that shows something is accepted, and the record says which rule it breaks', async () => {
    const headers = { ':path': `/3/device/${TOKEN}`, 'apns-topic': 'com.example.app', 'apns-push-type': 'background', 'apns-priority': '5' };
    expect(await post(apns, headers, { aps: { 'content-available': 1, badge: 1 } })).toBe(200);
    const [rec] = (await control('GET', `/records?platform=apns&token=${TOKEN}&limit=1`)) as { warnings: string[] }[];
    expect(rec?.warnings).toEqual(['a background push must not contain aps.badge']);
  });

  it('keeps warnings on the record', async () => {
    await post(apns, { ':path': `/3/device/${TOKEN}`, 'apns-topic': 'com.example.app', 'apns-push-type': 'alert' }, { aps: { 'thread-id': 't' } });
    const [rec] = (await control('GET', `/records?platform=apns&token=${TOKEN}&limit=1`)) as { warnings: string[] }[];
    expect(rec?.warnings).toEqual(['alert push with no aps.alert, aps.sound or aps.badge: the phone shows nothing']);
  });
});
