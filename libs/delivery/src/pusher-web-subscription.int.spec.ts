/**
 * A stored web push whose browser subscribed again at the same endpoint (new keys, and, after a
 * rotation, the app's new applicationServerKey) before it was released: the web-pusher (pusher.ts,
 * its claim in PostgreSQL, the real Web Push provider) encrypts it to the subscription as it is
 * now, so the browser can read it. A push service of the spec's own takes the request, and the
 * spec decrypts it as the browser would (RFC 8291), with the new subscription's private key.
 */
import { createECDH, createDecipheriv, hkdfSync, randomBytes, randomUUID, type ECDH } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { sendQueueFor, type DevicePush } from '@herald/contracts';
import { createAppCredentialStore } from '@herald/db';
import { createLogger } from '@herald/logging';
import type { InboundMessage } from '@herald/messaging';
import { createWebPushProvider, generateVapidKeys, type PushProvider } from '@herald/providers';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleProvider } from './provider-pool.ts';
import { createPusherHandler } from './pusher.ts';
import { createPusherMetrics } from './pusher-metrics.ts';

const logger = createLogger({ service: 'pusher-web-subscription-spec', level: 'silent', format: 'json' });
const SUBJECT = 'mailto:ops@example.com';
// The app's pair before its rotation, and the one after.
const previous = await generateVapidKeys();
const current = await generateVapidKeys();

/** A browser's subscription: its ECDH key pair and auth secret (what it decrypts with), and the keys it reports. */
function browserKeys(): { ecdh: ECDH; auth: Buffer; keys: { p256dh: string; auth: string } } {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = randomBytes(16);
  return { ecdh, auth, keys: { p256dh: ecdh.getPublicKey('base64url'), auth: auth.toString('base64url') } };
}

/** The plaintext of an aes128gcm Web Push body (RFC 8291 §3.4, RFC 8188 §2) as the browser holding `secrets` reads it; throws when it cannot. */
function decryptAs(body: Buffer, secrets: { ecdh: ECDH; auth: Buffer }): string {
  const salt = body.subarray(0, 16);
  const serverKey = body.subarray(21, 21 + (body[20] ?? 0));
  const info = (label: string, ...parts: Buffer[]): Buffer => Buffer.concat([Buffer.from(`${label}\0`, 'latin1'), ...parts]);
  const ikm = Buffer.from(hkdfSync('sha256', secrets.ecdh.computeSecret(serverKey), secrets.auth, info('WebPush: info', secrets.ecdh.getPublicKey(), serverKey), 32));
  const key = Buffer.from(hkdfSync('sha256', ikm, salt, info('Content-Encoding: aes128gcm'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, info('Content-Encoding: nonce'), 12));
  const record = body.subarray(21 + serverKey.length);
  const decipher = createDecipheriv('aes-128-gcm', key, nonce).setAuthTag(record.subarray(record.length - 16));
  const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
  return padded.subarray(0, padded.lastIndexOf(2)).toString('utf8');
}

let t: TestDatabase;
let service: https.Server;
let provider: PushProvider;
let endpoint: string;
const received: Array<{ body: Buffer; authorization: string }> = [];

beforeAll(async () => {
  t = await createTestDatabase('webresub');
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256', extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }] });
  service = https.createServer({ cert: pems.cert, key: pems.private }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks), authorization: req.headers.authorization ?? '' });
      res.writeHead(201, { location: `/m/${received.length}` }).end();
    });
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  const { port } = service.address() as AddressInfo;
  endpoint = `https://localhost:${port}/push/${randomUUID()}`;
  provider = await createWebPushProvider({ vapid: { subject: SUBJECT, current, previous }, trusted: [{ host: 'localhost', port, ca: pems.cert }], requestTimeoutMs: 5_000 }, logger);
});
afterAll(async () => {
  await provider?.close();
  service?.close();
  await t?.drop();
});

describe('a stored web push whose browser subscribed again at the same endpoint', () => {
  it("is encrypted to the browser's keys as they are now, and signed with the key it subscribed with now", async () => {
    await t.db.apps.upsert({ id: 'web-resub' });
    const app = await createAppCredentialStore(t.db.kysely, undefined).updateWebPush('web-resub', { hosts: ['localhost'] });
    const subscribe = (keys: { p256dh: string; auth: string }, applicationServerKey: string, eventAt: Date) =>
      t.db.devices.applyRegistration({ version: 1, kind: 'register', app: app.id, platform: 'web', token: endpoint, keys, applicationServerKey, userId: 'u1', eventAt: eventAt.toISOString() });
    const before = browserKeys();
    const now = browserKeys();
    await subscribe(before.keys, previous.publicKey, new Date(Date.now() - 3_600_000));
    const { id } = await t.db.kysely.selectFrom('devices').select('id').where('token', '=', endpoint).executeTakeFirstOrThrow();
    // Stored for later, with the subscription as it was (the demuxer's fan-out copies it).
    const push: DevicePush = {
      version: 1,
      pushId: randomUUID(),
      jobId: 'job-resub',
      deviceId: String(id),
      app: app.id,
      platform: 'web',
      token: endpoint,
      webKeys: before.keys,
      webVapidKey: previous.publicKey,
      userId: 'u1',
      content: { title: 'Your order shipped' },
      priority: 'high',
      acceptedAt: new Date(Date.now() - 3_600_000).toISOString(),
    };
    // Meanwhile the browser subscribed again, at the same endpoint, with new keys (after the app's rotation).
    await subscribe(now.keys, current.publicKey, new Date());

    const handle = createPusherHandler({
      platform: 'web',
      providers: singleProvider(provider),
      ledger: t.db.ledger,
      apps: t.db.apps,
      // A delivered push publishes nothing (an invalidation would).
      publisher: { publish: () => Promise.reject(new Error('nothing to publish')), publishMany: () => Promise.reject(new Error('nothing to publish')) },
      metrics: createPusherMetrics(new Registry()),
      logger,
      owner: 'pusher-web-subscription-spec',
      leaseMs: 30_000,
    });
    const message: InboundMessage = { body: Buffer.from(JSON.stringify(push)), headers: {}, routingKey: sendQueueFor('web'), redelivered: false, attempt: 1, queue: sendQueueFor('web') };
    expect(await handle([message])).toEqual([{ kind: 'ack' }]);

    expect(received).toHaveLength(1);
    const [request] = received as [{ body: Buffer; authorization: string }];
    // The browser reads it with the keys it holds now.
    expect(JSON.parse(decryptAs(request.body, now))).toMatchObject({ title: 'Your order shipped', pushId: push.pushId });
    // Signed with the applicationServerKey the subscription was made with now: the push service refuses any other.
    expect(request.authorization).toContain(`k=${current.publicKey}`);
    const ledger = await t.db.kysely.selectFrom('delivery_ledger').select(['state', 'outcome']).where('push_id', '=', push.pushId).executeTakeFirst();
    expect(ledger).toEqual({ state: 'done', outcome: 'delivered' });
  });
});
