import { createECDH, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApnsProvider } from './apns-provider.ts';
import { createFcmProvider } from './fcm-provider.ts';
import { isRefusal, type PushProvider } from './push-provider.ts';
import { testPush } from './test-pushes.ts';
import { createUncredentialedProvider } from './uncredentialed-provider.ts';
import { createWebPushProvider } from './web-push-provider.ts';
import { generateVapidKeys } from './web-vapid-keys.ts';

/**
 * A provider's prepare: Herald's own checks, made before the pusher asks the rate limiter. What it
 * refuses is what send refuses, with no request; what it made is sent as made, and, made before a
 * wait for budget (stale), with its TTL counted from the send and an APNs client certificate's
 * dates judged again. A push service and an FCM endpoint
 * of the spec's own (on 127.0.0.1, trusted by their CA) take the requests.
 */
const logger = createLogger({ service: 'provider-prepare-spec', level: 'silent', format: 'json' });
/** Now, to the second (web-push signs a VAPID JWT for at most 24 hours from the host's clock). */
const T0 = Math.floor(Date.now() / 1000) * 1000;
/** The providers' clock: the spec moves it. */
let clock = T0;
/** The Web Push TTL header of each request the push service took, and the android.ttl of each FCM message. */
const webTtls: string[] = [];
const fcmTtls: string[] = [];
let web: PushProvider;
let fcm: PushProvider;
let webService: https.Server;
let fcmService: http2.Http2SecureServer;
let webPort: number;

beforeAll(async () => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }],
  });
  webService = https.createServer({ cert: pems.cert, key: pems.private }, (req, res) => {
    webTtls.push(String(req.headers['ttl']));
    req.resume().on('end', () => res.writeHead(201, { location: `/m/${webTtls.length}` }).end());
  });
  fcmService = http2.createSecureServer({ cert: pems.cert, key: pems.private }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { message } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { message: { android: { ttl: string } } };
      fcmTtls.push(message.android.ttl);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name: `projects/herald-test/messages/${fcmTtls.length}` }));
    });
  });
  const listening = (server: https.Server | http2.Http2SecureServer): Promise<number> =>
    new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  webPort = await listening(webService);
  const fcmPort = await listening(fcmService);
  const vapid = { subject: 'mailto:ops@example.com', current: await generateVapidKeys() };
  web = await createWebPushProvider({ vapid, trusted: [{ host: 'localhost', port: webPort, ca: pems.cert }], requestTimeoutMs: 5_000 }, logger, () => clock);
  const fcmSettings = { projectId: 'herald-test', credential: { kind: 'access-token', accessToken: 'token' }, endpoint: { host: 'localhost', port: fcmPort, ca: pems.cert }, requestTimeoutMs: 5_000 } as const;
  fcm = await createFcmProvider(fcmSettings, logger, () => new Date(clock));
});
afterAll(async () => {
  await Promise.all([web?.close(), fcm?.close()]);
  webService?.closeAllConnections();
  webService?.close();
  fcmService?.close();
});

function webPush(over: Partial<DevicePush> = {}): DevicePush {
  const browser = createECDH('prime256v1');
  browser.generateKeys();
  const webKeys = { p256dh: browser.getPublicKey('base64url'), auth: randomBytes(16).toString('base64url') };
  return testPush('web', { token: `https://localhost:${webPort}/push/${randomUUID()}`, webKeys, ...over });
}

/** Over what Apple, Google and the push services take (4 KB). */
const oversize: DevicePush['content'] = { title: 't'.repeat(2_000), body: 'b'.repeat(4_000) };

describe("a provider's prepare", () => {
  it('refuses what send refuses, with the same result and no request: an oversize payload, a push without its subscription keys, no credentials', async () => {
    const cases: Array<[PushProvider, DevicePush]> = [
      [web, webPush({ content: oversize })],
      [web, testPush('web', { token: `https://localhost:${webPort}/push/${randomUUID()}` })],
      [fcm, testPush('fcm', { content: oversize })],
      [createUncredentialedProvider('fcm', 'FCM_APP_CREDENTIALS_ONLY'), testPush('fcm')],
    ];
    const [webBefore, fcmBefore] = [webTtls.length, fcmTtls.length];
    for (const [provider, push] of cases) {
      const refused = provider.prepare?.(push, {});
      expect(refused !== undefined && isRefusal(refused)).toBe(true);
      expect(refused).toEqual(await provider.send(push, {}));
      expect(refused).toMatchObject({ kind: 'permanent', notSent: true });
    }
    expect([webTtls.length, fcmTtls.length]).toEqual([webBefore, fcmBefore]);
  });

  it('APNs: refuses a push of an app without a topic, and an oversize one, as send does, without a request', async () => {
    // Nothing listens there: a request would be a transport failure, not a refusal.
    const apns = await createApnsProvider(
      { address: '127.0.0.1', port: 9, production: false, auth: { kind: 'token', key: generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), keyId: 'ABC123DEFG', teamId: 'DEF123GHIJ' }, requestTimeoutMs: 400 },
      logger,
    );
    try {
      for (const [push, target, reason] of [
        [testPush('apns'), {}, /^no APNs topic for this app$/],
        [testPush('apns', { content: oversize }), { apnsTopic: 'com.example.app' }, /^payload too large: /],
        // 1,400 characters, 4,200 bytes in UTF-8: the limit counts bytes.
        [testPush('apns', { content: { title: 'Prices', body: '€'.repeat(1_400) } }), { apnsTopic: 'com.example.app' }, /^payload too large: APNs alert payload is 42\d\d bytes/],
      ] as const) {
        const refused = apns.prepare?.(push, target);
        expect(refused).toEqual({ kind: 'permanent', reason: expect.stringMatching(reason) as unknown, notSent: true });
        expect(await apns.send(push, target)).toEqual(refused);
      }
    } finally {
      await apns.close();
    }
  });

  it("APNs: a push prepared before the app's certificate expired and sent after a wait for budget (stale) is refused as the app's credentials, without a request", async () => {
    const made = await generate([{ name: 'commonName', value: 'Apple Push Services: com.example.app' }], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      notBeforeDate: new Date(T0 - 86_400_000),
      notAfterDate: new Date(T0 + 60_000),
    });
    clock = T0;
    // Nothing listens there: a request is a transport failure, not a refusal.
    const apns = await createApnsProvider({ address: '127.0.0.1', port: 9, production: false, auth: { kind: 'certificate', cert: made.cert, key: made.private }, requestTimeoutMs: 400 }, logger, () => clock);
    try {
      const push = testPush('apns');
      const target = { apnsTopic: 'com.example.app' };
      const prepared = apns.prepare?.(push, target);
      if (prepared === undefined || isRefusal(prepared)) throw new Error(`not prepared: ${JSON.stringify(prepared)}`);
      // Still valid at the send: it goes.
      clock = T0 + 30_000;
      expect(await apns.send(push, target, prepared, true)).toMatchObject({ kind: 'transient', reason: expect.stringMatching(/^transport: /) as unknown });
      clock = T0 + 61_000;
      expect(await apns.send(push, target, prepared, true)).toEqual({
        kind: 'permanent',
        reason: expect.stringMatching(/^credentials: the app's APNs certificate expired on \d{4}-.*; rotate it/) as unknown,
        notSent: true,
      });
    } finally {
      await apns.close();
    }
  });

  it.each([
    ['Web Push', () => web, () => webPush({ expiresAt: new Date(T0 + 3_600_000).toISOString() }), webTtls, (s: number) => String(s)],
    ['FCM', () => fcm, () => testPush('fcm', { expiresAt: new Date(T0 + 3_600_000).toISOString() }), fcmTtls, (s: number) => `${s}s`],
  ] as const)('%s: what it made is sent as made; made before a wait for budget (stale), its TTL counts from the send', async (_, provider, push, ttls, ttl) => {
    for (const [stale, sent] of [
      [false, ttl(3_600)],
      [true, ttl(3_590)],
    ] as const) {
      clock = T0;
      const p = push();
      const prepared = provider().prepare?.(p, {});
      if (prepared === undefined || isRefusal(prepared)) throw new Error(`not prepared: ${JSON.stringify(prepared)}`);
      clock = T0 + 10_000;
      expect(await provider().send(p, {}, prepared, stale)).toMatchObject({ kind: 'delivered' });
      expect(ttls.at(-1)).toBe(sent);
    }
  });
});
