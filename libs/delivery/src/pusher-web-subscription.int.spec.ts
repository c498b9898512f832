/**
 * The web-pusher (pusher.ts, its claim in PostgreSQL, the real Web Push provider) against push
 * services of the spec's own. A stored web push whose browser subscribed again at the same endpoint
 * (new keys, and, after a rotation, the app's new applicationServerKey) before it was released is
 * encrypted to the subscription as it is now, so the browser can read it: the push service takes
 * the request, and the spec decrypts it as the browser would (RFC 8291), with the new subscription's
 * private key. A push service that keeps refusing the app's VAPID JWT bans the app there only.
 */
import { createECDH, createDecipheriv, hkdfSync, randomBytes, randomUUID, type ECDH } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sendQueueFor, type DevicePush } from '@herald/contracts';
import { createAppCredentialStore, createSecretBox, type AppRow } from '@herald/db';
import { createLogger } from '@herald/logging';
import type { InboundMessage } from '@herald/messaging';
import { createWebPushProvider, generateVapidKeys, type PushProvider } from '@herald/providers';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppBans, type AppBans } from './app-ban.ts';
import { createAppDelivery } from './app-delivery.ts';
import { singleProvider, type ProviderSource } from './provider-pool.ts';
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

type Received = { body: Buffer; authorization: string; path: string; status: number };

/**
 * The application server key each subscription (by its endpoint's path) was made with, where the
 * spec says so: signed with another, the accepting push service refuses the push, as Mozilla's does.
 */
const subscribedWith = new Map<string, string>();

/** The answer of a push service that answers `status` (and `body`) but to a push signed with another key than its subscription's. */
function answerTo(path: string, authorization: string, status: number, body: string): { status: number; body: string } {
  const key = subscribedWith.get(path);
  if (key !== undefined && !authorization.includes(`k=${key}`)) return { status: 401, body: '{"code":401,"errno":109,"error":"Unauthorized","message":"VAPID public key mismatch"}' };
  return { status, body };
}

/** A push service on 127.0.0.1 that answers every request with `status` (and `body`), keeping what it received. */
async function pushService(pems: { cert: string; private: string }, status: number, body = ''): Promise<{ server: https.Server; port: number; received: Received[] }> {
  const got: Received[] = [];
  const server = https.createServer({ cert: pems.cert, key: pems.private }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const [path, authorization] = [req.url ?? '', req.headers.authorization ?? ''];
      const answer = answerTo(path, authorization, status, body);
      got.push({ body: Buffer.concat(chunks), authorization, path, status: answer.status });
      res.writeHead(answer.status, answer.status === 201 ? { location: `/m/${got.length}` } : {}).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, received: got };
}

let t: TestDatabase;
let services: Array<Awaited<ReturnType<typeof pushService>>> = [];
let provider: PushProvider;
/** The push service that takes every push, at https://localhost:<port>. */
let accepting: Awaited<ReturnType<typeof pushService>>;
/** Another push service, at https://127.0.0.1:<port>, that refuses the app's VAPID JWT (as autopush answers 401 to one it will not take). */
let refusing: Awaited<ReturnType<typeof pushService>>;
let endpoint: string;
let received: Received[];
let pemsOfServices: { cert: string; private: string };

beforeAll(async () => {
  t = await createTestDatabase('webresub');
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }],
  });
  pemsOfServices = pems;
  accepting = await pushService(pems, 201);
  refusing = await pushService(pems, 401, '{"code":401,"errno":109,"error":"Unauthorized","message":"Request did not validate Invalid Authorization Header"}');
  services = [accepting, refusing];
  received = accepting.received;
  endpoint = `https://localhost:${accepting.port}/push/${randomUUID()}`;
  const trusted = [
    { host: 'localhost', port: accepting.port, ca: pems.cert },
    { host: '127.0.0.1', port: refusing.port, ca: pems.cert },
  ];
  provider = await createWebPushProvider({ vapid: { subject: SUBJECT, current, previous }, trusted, requestTimeoutMs: 5_000 }, logger);
});
afterAll(async () => {
  await provider?.close();
  for (const s of services) s.server.close();
  await t?.drop();
});

/** The web-pusher's handler over the spec's database and push services (`bans`: the pusher's app bans). */
const webPusher = (bans?: AppBans) => webPusherWith(singleProvider(provider), bans);

/** The same with these providers (an app's own, app-delivery.ts). */
const webPusherWith = (providers: ProviderSource, bans?: AppBans) =>
  createPusherHandler({
    platform: 'web',
    providers,
    ledger: t.db.ledger,
    apps: t.db.apps,
    ...(bans !== undefined && { bans }),
    // A delivered or parked push publishes nothing (an invalidation would).
    publisher: { publish: () => Promise.reject(new Error('nothing to publish')), publishMany: () => Promise.reject(new Error('nothing to publish')) },
    metrics: createPusherMetrics(new Registry()),
    logger,
    owner: 'pusher-web-subscription-spec',
    leaseMs: 30_000,
  });

const delivery = (push: DevicePush): InboundMessage => ({ body: Buffer.from(JSON.stringify(push)), headers: {}, routingKey: sendQueueFor('web'), redelivered: false, attempt: 1, queue: sendQueueFor('web') });

/** A browser subscribed at `endpoint` (a device of the app), and a push to it now. */
async function subscribedPush(app: AppRow, endpointUrl: string, applicationServerKey = current.publicKey): Promise<DevicePush> {
  const { keys } = browserKeys();
  await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: app.id, platform: 'web', token: endpointUrl, keys, applicationServerKey, userId: 'u2', eventAt: new Date().toISOString() });
  const { id } = await t.db.kysely.selectFrom('devices').select('id').where('app', '=', app.id).where('token', '=', endpointUrl).executeTakeFirstOrThrow();
  return {
    version: 1,
    pushId: randomUUID(),
    jobId: 'job-web',
    deviceId: String(id),
    app: app.id,
    platform: 'web',
    token: endpointUrl,
    webKeys: keys,
    webVapidKey: applicationServerKey,
    userId: 'u2',
    content: { title: 'Your order shipped' },
    priority: 'high',
    acceptedAt: new Date().toISOString(),
  };
}

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

    expect(await webPusher()([delivery(push)])).toEqual([{ kind: 'ack' }]);

    expect(received).toHaveLength(1);
    const [request] = received as [Received];
    // The browser reads it with the keys it holds now.
    expect(JSON.parse(decryptAs(request.body, now))).toMatchObject({ title: 'Your order shipped', pushId: push.pushId });
    // Signed with the applicationServerKey the subscription was made with now: the push service refuses any other.
    expect(request.authorization).toContain(`k=${current.publicKey}`);
    const ledger = await t.db.kysely.selectFrom('delivery_ledger').select(['state', 'outcome']).where('push_id', '=', push.pushId).executeTakeFirst();
    expect(ledger).toEqual({ state: 'done', outcome: 'delivered' });
  });
});

describe('a web push whose browser was given a new subscription (pushsubscriptionchange) before it was sent', () => {
  /** A browser subscribed at `token` with `keys` for user u3 of `app`, naming `previousToken` as the subscription it replaces. */
  const subscribe = (app: string, token: string, keys: { p256dh: string; auth: string }, previousToken?: string) =>
    t.db.devices.applyRegistration({ version: 1, kind: 'register', app, platform: 'web', token, keys, applicationServerKey: current.publicKey, userId: 'u3', eventAt: new Date().toISOString(), ...(previousToken !== undefined && { previousToken }) });
  /** A push made for the browser's subscription at `token` while it was live, as the demuxer made it. */
  const pushFor = async (app: string, token: string, keys: { p256dh: string; auth: string }): Promise<DevicePush> => {
    const { id } = await t.db.kysely.selectFrom('devices').select('id').where('app', '=', app).where('token', '=', token).executeTakeFirstOrThrow();
    return { version: 1, pushId: randomUUID(), jobId: 'job-moved', deviceId: String(id), app, platform: 'web', token, webKeys: keys, webVapidKey: current.publicKey, userId: 'u3', content: { title: 'Back in stock' }, priority: 'high', acceptedAt: new Date().toISOString() };
  };

  it('goes to the new subscription, encrypted to its keys, when the browser registered it naming the old one', async () => {
    await t.db.apps.upsert({ id: 'web-moved' });
    const app = await createAppCredentialStore(t.db.kysely, undefined).updateWebPush('web-moved', { hosts: ['localhost'] });
    const [old, renewed] = [browserKeys(), browserKeys()];
    const [oldEndpoint, newEndpoint] = [`https://localhost:${accepting.port}/push/${randomUUID()}`, `https://localhost:${accepting.port}/push/${randomUUID()}`];
    await subscribe(app.id, oldEndpoint, old.keys);
    const push = await pushFor(app.id, oldEndpoint, old.keys);
    await subscribe(app.id, newEndpoint, renewed.keys, oldEndpoint);
    const before = received.length;

    expect(await webPusher()([delivery(push)])).toEqual([{ kind: 'ack' }]);

    const sent = received.slice(before);
    expect(sent.map((r) => r.path)).toEqual([new URL(newEndpoint).pathname]);
    expect(JSON.parse(decryptAs((sent[0] as Received).body, renewed))).toMatchObject({ title: 'Back in stock', pushId: push.pushId });
    const ledger = await t.db.kysely.selectFrom('delivery_ledger').select(['state', 'outcome']).where('push_id', '=', push.pushId).executeTakeFirst();
    expect(ledger).toEqual({ state: 'done', outcome: 'delivered' });
  });

  it("whose second claim fails is tried again later, while the batch's other pushes are sent, not held for a lease", async () => {
    await t.db.apps.upsert({ id: 'web-moved-fail' });
    const app = await createAppCredentialStore(t.db.kysely, undefined).updateWebPush('web-moved-fail', { hosts: ['localhost'] });
    const [old, renewed, other] = [browserKeys(), browserKeys(), browserKeys()];
    const endpointOf = () => `https://localhost:${accepting.port}/push/${randomUUID()}`;
    const [oldEndpoint, otherEndpoint] = [endpointOf(), endpointOf()];
    await subscribe(app.id, oldEndpoint, old.keys);
    await subscribe(app.id, otherEndpoint, other.keys);
    const [moving, live] = [await pushFor(app.id, oldEndpoint, old.keys), await pushFor(app.id, otherEndpoint, other.keys)];
    await subscribe(app.id, endpointOf(), renewed.keys, oldEndpoint);
    let claims = 0;
    const ledger = { ...t.db.ledger, claimLive: (...args: Parameters<typeof t.db.ledger.claimLive>) => (++claims === 1 ? t.db.ledger.claimLive(...args) : Promise.reject(new Error('statement timeout'))) };
    const handle = createPusherHandler({
      platform: 'web',
      providers: singleProvider(provider),
      ledger,
      apps: t.db.apps,
      publisher: { publish: () => Promise.reject(new Error('nothing to publish')), publishMany: () => Promise.reject(new Error('nothing to publish')) },
      metrics: createPusherMetrics(new Registry()),
      logger,
      owner: 'pusher-web-subscription-spec',
      leaseMs: 30_000,
    });

    const outcomes = await handle([delivery(moving), delivery(live)]);

    expect(outcomes).toEqual([{ kind: 'defer', code: 'in-flight', reason: expect.any(String) as unknown, delayMs: 5_000 }, { kind: 'ack' }]);
    const ledgerRows = await t.db.kysely.selectFrom('delivery_ledger').select(['push_id', 'state']).where('push_id', 'in', [moving.pushId, live.pushId]).execute();
    expect(ledgerRows).toEqual([{ push_id: live.pushId, state: 'done' }]);
  });

  it("is parked, not sent, when the new subscription's push service is one the app no longer takes", async () => {
    await t.db.apps.upsert({ id: 'web-moved-off-list' });
    const store = createAppCredentialStore(t.db.kysely, undefined);
    const app = await store.updateWebPush('web-moved-off-list', { hosts: ['localhost', '127.0.0.1'] });
    const [old, renewed] = [browserKeys(), browserKeys()];
    const oldEndpoint = `https://localhost:${accepting.port}/push/${randomUUID()}`;
    await subscribe(app.id, oldEndpoint, old.keys);
    const push = await pushFor(app.id, oldEndpoint, old.keys);
    await subscribe(app.id, `https://127.0.0.1:${refusing.port}/push/${randomUUID()}`, renewed.keys, oldEndpoint);
    // The operator takes the new subscription's push service off the app's list before the push is sent.
    await store.updateWebPush(app.id, { hosts: ['localhost'] });
    const [before, refused] = [received.length, refusing.received.length];

    const [outcome] = await webPusher()([delivery(push)]);

    expect(outcome).toMatchObject({ kind: 'park', code: 'push-service-not-allowed' });
    expect([received.length - before, refusing.received.length - refused]).toEqual([0, 0]);
  });
});

describe("a push service that keeps refusing the app's VAPID JWT", () => {
  // Before: the app was banned, and its pushes to every push service parked, Chrome's and Apple's that take its key too.
  it('bans the app at that push service only: its pushes there are parked unsent, those to another push service are sent', async () => {
    await t.db.apps.upsert({ id: 'web-ban' });
    const app = await createAppCredentialStore(t.db.kysely, undefined).updateWebPush('web-ban', { hosts: ['localhost', '127.0.0.1'] });
    const bans = createAppBans({ threshold: 3, windowMs: 60_000, cooldownMs: 300_000 }, logger, new Registry());
    const handle = webPusher(bans);
    const atRefusing = () => subscribedPush(app, `https://127.0.0.1:${refusing.port}/push/${randomUUID()}`);
    for (let i = 0; i < 3; i++) {
      expect(await handle([delivery(await atRefusing())])).toEqual([{ kind: 'park', code: 'provider-rejected', reason: expect.stringMatching(/^VapidUnauthorized: .*HTTP 401/) as unknown }]);
    }
    expect(refusing.received).toHaveLength(3);

    // The same app's push to another push service is sent.
    const before = accepting.received.length;
    expect(await handle([delivery(await subscribedPush(app, `https://localhost:${accepting.port}/push/${randomUUID()}`))])).toEqual([{ kind: 'ack' }]);
    expect(accepting.received).toHaveLength(before + 1);
    // Banned at the refusing one: parked unsent, naming the push service.
    expect(await handle([delivery(await atRefusing())])).toEqual([
      { kind: 'park', code: 'app-banned', reason: expect.stringMatching(/^app "web-ban" is banned at push service 127\.0\.0\.1 until .*refused the app's VAPID JWT/) as unknown },
    ]);
    expect(refusing.received).toHaveLength(3);
  });
});

describe('a subscription that takes another key pair than its device records', () => {
  // Before: remembered in the web-pusher's memory only, so each restarted or other web-pusher paid a refused request first.
  it('has the pair that worked recorded on its device: a new web-pusher signs with it first, one request', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'herald-web-learned-'));
    try {
      // The spec's push service as the sandbox would be trusted (sandbox.json), and the app's pairs sealed as stored.
      const caFile = join(stateDir, 'ca.pem');
      await writeFile(caFile, pemsOfServices.cert);
      await writeFile(join(stateDir, 'sandbox.json'), JSON.stringify({ web: { host: 'localhost', port: accepting.port, caFile } }));
      const secret = randomBytes(32).toString('hex');
      const store = createAppCredentialStore(t.db.kysely, createSecretBox(secret));
      await t.db.apps.upsert({ id: 'web-learn' });
      await store.generateVapid('web-learn', { subject: SUBJECT, keys: previous });
      await store.rotateVapid('web-learn', { keys: current });
      const app = await store.updateWebPush('web-learn', { hosts: ['localhost'] });
      // The browser subscribed with the app's previous key; registered without naming it after the rotation, its device records the current one.
      const path = `/push/${randomUUID()}`;
      subscribedWith.set(path, previous.publicKey);
      const push = await subscribedPush(app, `https://localhost:${accepting.port}${path}`, current.publicKey);
      const config = {
        HERALD_SECRET_KEY: secret,
        PROVIDER_IDLE_MS: 60_000,
        APP_REQUEST_TIMEOUT_MS: 5_000,
        APP_BAN_THRESHOLD: 20,
        APP_BAN_WINDOW_MS: 60_000,
        APP_BAN_COOLDOWN_MS: 300_000,
        JOB_STATUS_ENABLED: false,
        SANDBOX_STATE_DIR: stateDir,
      };
      /** A web-pusher as run-pusher.ts makes one: the apps' own providers (app-delivery.ts) over the database. */
      const newWebPusher = () => {
        const perApp = createAppDelivery('web', config, t.db, provider, logger, new Registry());
        return { perApp, handle: webPusherWith(perApp.providers, perApp.bans) };
      };
      const statuses = () => accepting.received.filter((r) => r.path === path).map((r) => r.status);
      const recorded = async () => (await t.db.kysely.selectFrom('devices').select('web_vapid_key').where('id', '=', push.deviceId).executeTakeFirstOrThrow()).web_vapid_key;

      const first = newWebPusher();
      expect(await first.handle([delivery(push)])).toEqual([{ kind: 'ack' }]);
      expect(statuses()).toEqual([401, 201]);
      expect(await recorded()).toBe(previous.publicKey);
      await first.perApp.providers.close();

      // Another web-pusher (or this one restarted) sends a push queued before, that still names the current key: one request.
      const second = newWebPusher();
      expect(await second.handle([delivery({ ...push, pushId: randomUUID() })])).toEqual([{ kind: 'ack' }]);
      expect(statuses()).toEqual([401, 201, 201]);
      expect(accepting.received.at(-1)?.authorization).toContain(`k=${previous.publicKey}`);
      await second.perApp.providers.close();
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});

