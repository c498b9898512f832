import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivePushId, type DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { createRateLimiter, MemoryRateLimitStore } from '@herald/rate-limiter';
import { Registry } from '@herald/runtime';
import { createWebPushProvider, generateVapidKeys, loadSandboxWebTrust, type PushProvider, type WebPushSettings } from '@herald/providers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from './index.ts';

/** Provider (web-push encrypting and signing) against the sandbox's push service (node:crypto decrypting and verifying). */
const logger = createLogger({ service: 'web-int', level: 'silent' });
let stateDir: string;
let sandbox: Sandbox;
let settings: WebPushSettings;
let provider: PushProvider;
let n = 0;

// Herald's own generator: raw ECDH drops a private scalar's leading zero byte (one key in 256).
const appKeys = await generateVapidKeys();

const control = async (method: string, path: string, body?: unknown): Promise<unknown> => {
  const res = await fetch(`${sandbox.settings.control.url}${path}`, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return res.json();
};
type Subscription = { endpoint: string; keys: { p256dh: string; auth: string } };
const subscribe = (applicationServerKey?: string, service?: 'apple'): Promise<Subscription> =>
  control('POST', '/web/subscriptions', { ...(applicationServerKey !== undefined && { applicationServerKey }), ...(service !== undefined && { service }) }) as Promise<Subscription>;
const received = async (endpoint: string): Promise<Array<Record<string, unknown>>> =>
  (await control('GET', `/web/pushes?endpoint=${encodeURIComponent(endpoint)}`)) as Array<Record<string, unknown>>;
const fault = (spec: Record<string, unknown>): Promise<unknown> => control('POST', '/faults', { platform: 'web', ...spec });

function webPush(sub: Subscription, over: Partial<DevicePush> = {}): DevicePush {
  n += 1;
  return {
    version: 1,
    pushId: derivePushId('job-web', `device-${n}`),
    jobId: 'job-web',
    deviceId: `device-${n}`,
    app: 'demo',
    platform: 'web',
    token: sub.endpoint,
    webKeys: sub.keys,
    userId: 'user-1',
    content: { title: 'Hello', body: 'World', data: { chat: '42' }, clickAction: 'https://example.com/chat/42' },
    priority: 'high',
    collapseKey: 'chat-420',
    acceptedAt: new Date().toISOString(),
    ...over,
  };
}

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'herald-web-'));
  sandbox = await startSandbox({ stateDir, logger });
  settings = { trusted: await loadSandboxWebTrust(stateDir), vapid: { subject: 'mailto:ops@example.com', current: appKeys }, requestTimeoutMs: 5000 };
  provider = await createWebPushProvider(settings, logger);
});
afterAll(async () => {
  await provider?.close();
  await sandbox?.close();
  await rm(stateDir, { recursive: true, force: true });
});

describe('Web Push provider against the sandbox push service', () => {
  it('delivers: the push service decrypts exactly the JSON Herald sent, with TTL, Urgency, Topic and a verified VAPID JWT', async () => {
    const sub = await subscribe(appKeys.publicKey);
    const push = webPush(sub, { expiresAt: new Date(Date.now() + 3600_000).toISOString() });
    const result = await provider.send(push, {});
    expect(result).toMatchObject({ kind: 'delivered', providerMessageId: expect.stringContaining('/m/') });
    const [got] = await received(sub.endpoint);
    expect(got?.['payload']).toEqual({
      title: 'Hello',
      body: 'World',
      tag: 'chat-420',
      url: 'https://example.com/chat/42',
      data: { chat: '42' },
      jobId: 'job-web',
      pushId: push.pushId,
      sentAt: expect.any(String),
    });
    expect(got?.['ttl']).toBeGreaterThan(3500);
    expect(got?.['ttl']).toBeLessThanOrEqual(3600);
    expect(got).toMatchObject({ urgency: 'high', topic: 'chat-420', vapidKey: appKeys.publicKey });
    const claims = got?.['claims'] as { aud: string; exp: number; sub: string };
    expect(claims.aud).toBe(new URL(sub.endpoint).origin);
    expect(claims.sub).toBe('mailto:ops@example.com');
    expect(claims.exp).toBeGreaterThan(Date.now() / 1000);
  });

  it('a collapse key outside RFC 8030 becomes a stable 32-character topic (same key, same topic)', async () => {
    const sub = await subscribe();
    for (let i = 0; i < 2; i++) expect(await provider.send(webPush(sub, { collapseKey: 'score: 2–1 (live)' }), {})).toMatchObject({ kind: 'delivered' });
    const topics = (await received(sub.endpoint)).map((p) => p['topic']);
    expect(topics[0]).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(topics[1]).toBe(topics[0]);
  });

  it("a topic of 1, 5, 9 … characters, which Safari's push service refuses (BadWebPushTopic), reaches it as a stable digest; Chrome's gets the same", async () => {
    const safari = await subscribe(appKeys.publicKey, 'apple');
    const chrome = await subscribe(appKeys.publicKey);
    for (const sub of [safari, chrome]) {
      expect(await provider.send(webPush(sub, { collapseKey: 'spike' }), {})).toMatchObject({ kind: 'delivered' });
      expect(await provider.send(webPush(sub, { collapseKey: 'x', content: { title: 'x', web: { topic: 'new_event' } } }), {})).toMatchObject({ kind: 'delivered' });
    }
    const safariTopics = (await received(safari.endpoint)).map((p) => p['topic']);
    expect(safariTopics).toEqual([expect.stringMatching(/^[A-Za-z0-9_-]{32}$/), expect.stringMatching(/^[A-Za-z0-9_-]{32}$/)]);
    expect((await received(chrome.endpoint)).map((p) => p['topic'])).toEqual(safariTopics);
  });

  it('signs with another key than the subscription was made with: 403, permanent (the subscription is not invalidated), Safari\'s VapidPkHashMismatch too', async () => {
    const sub = await subscribe((await generateVapidKeys()).publicKey);
    const result = await provider.send(webPush(sub), {});
    expect(result).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^VapidKeyMismatch: .*HTTP 403/) });
    expect(await received(sub.endpoint)).toEqual([]);
    const safari = await subscribe((await generateVapidKeys()).publicKey, 'apple');
    expect(await provider.send(webPush(safari), {})).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^VapidKeyMismatch: .*VapidPkHashMismatch/) });
  });

  // A register without applicationServerKey records the app's current key when the registrar applies it: a
  // guess, wrong for a browser that subscribed with the previous key (a registration backlog across a rotation)
  // or with the web-pusher's (before the app got keys of its own). Every push to it was parked VapidKeyMismatch.
  it("a subscription whose device records another key than it was made with is signed with the next pair Herald holds (previous, the web-pusher's), which goes first from then on", async () => {
    const [current, previous, processPair] = [await generateVapidKeys(), await generateVapidKeys(), await generateVapidKeys()];
    const held = { vapid: { subject: 'mailto:ops@example.com', current, previous }, processVapid: { subject: 'mailto:herald@example.org', current: processPair } };
    // What the web-pusher records on the devices (WebPushSettings.recordKey): the key each subscription took, on that path only.
    const recorded: Array<[string, string]> = [];
    const recordKey = (push: DevicePush, publicKey: string) => Promise.resolve(recorded.push([push.token, publicKey]));
    const app = await createWebPushProvider({ ...settings, ...held, recordKey }, logger);
    const statuses = async (endpoint: string) => ((await control('GET', `/records?platform=web&token=${encodeURIComponent(endpoint)}`)) as Array<{ status: number }>).map((r) => r.status);
    try {
      const beforeRotation = await subscribe(previous.publicKey);
      const beforeKeys = await subscribe(processPair.publicKey, 'apple');
      for (const sub of [beforeRotation, beforeKeys]) expect(await app.send(webPush(sub, { webVapidKey: current.publicKey }), {})).toMatchObject({ kind: 'delivered' });
      expect(await received(beforeRotation.endpoint)).toEqual([expect.objectContaining({ vapidKey: previous.publicKey })]);
      expect(await received(beforeKeys.endpoint)).toEqual([expect.objectContaining({ vapidKey: processPair.publicKey, claims: expect.objectContaining({ sub: 'mailto:herald@example.org' }) })]);
      expect(await statuses(beforeKeys.endpoint)).toEqual([400, 400, 201]);
      // Remembered: the next push is one request, not a refusal first.
      expect(await app.send(webPush(beforeKeys, { webVapidKey: current.publicKey }), {})).toMatchObject({ kind: 'delivered' });
      expect(await statuses(beforeKeys.endpoint)).toEqual([400, 400, 201, 201]);
      expect(recorded).toEqual([
        [beforeRotation.endpoint, previous.publicKey],
        [beforeKeys.endpoint, processPair.publicKey],
      ]);
      // A push signed with the key its device records costs no write.
      expect(await app.send(webPush(await subscribe(current.publicKey), { webVapidKey: current.publicKey }), {})).toMatchObject({ kind: 'delivered' });
      expect(recorded).toHaveLength(2);
      // Made with a key Herald holds no pair for: parked as before, naming the pairs tried.
      const elsewhere = await subscribe((await generateVapidKeys()).publicKey);
      expect(await app.send(webPush(elsewhere, { webVapidKey: current.publicKey }), {})).toMatchObject({
        kind: 'permanent',
        reason: expect.stringMatching(/^VapidKeyMismatch: .*HTTP 403.*; refused signed with key \S+, the web-pusher's WEB_PUSH_VAPID_PUBLIC_KEY \S+ too$/),
      });
      expect(await received(elsewhere.endpoint)).toEqual([]);
      // Remembered too: its next push is one request (as the limiter counts it), not one for each pair held.
      expect(await app.send(webPush(elsewhere, { webVapidKey: current.publicKey }), {})).toMatchObject({ kind: 'permanent' });
      expect(await statuses(elsewhere.endpoint)).toEqual([403, 403, 403, 403]);
      expect(recorded).toHaveLength(2);
    } finally {
      await app.close();
    }
  });

  it('a key the device could not be told of (its database away) leaves the push delivered, and remembered in this process', async () => {
    const [current, previous] = [await generateVapidKeys(), await generateVapidKeys()];
    const recordKey = () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
    const app = await createWebPushProvider({ ...settings, vapid: { subject: 'mailto:ops@example.com', current, previous }, recordKey }, logger);
    try {
      const sub = await subscribe(previous.publicKey);
      for (let i = 0; i < 2; i++) expect(await app.send(webPush(sub, { webVapidKey: current.publicKey }), {})).toMatchObject({ kind: 'delivered' });
      expect(((await control('GET', `/records?platform=web&token=${encodeURIComponent(sub.endpoint)}`)) as Array<{ status: number }>).map((r) => r.status)).toEqual([403, 201, 201]);
    } finally {
      await app.close();
    }
  });

  it("a subject Apple's push service cannot reach (mailto:ops@localhost) is answered 403 {\"reason\":\"BadJwtToken\"} by Safari's: the app's credential failure; Chrome's and Firefox's take it", async () => {
    const local = await createWebPushProvider({ ...settings, vapid: { subject: 'mailto:ops@localhost', current: appKeys } }, logger);
    try {
      const safari = await subscribe(appKeys.publicKey, 'apple');
      expect(await local.send(webPush(safari), {})).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^VapidUnauthorized: .*BadJwtToken/) });
      expect(await received(safari.endpoint)).toEqual([]);
      const chrome = await subscribe(appKeys.publicKey);
      expect(await local.send(webPush(chrome), {})).toMatchObject({ kind: 'delivered' });
    } finally {
      await local.close();
    }
  });

  it("Safari's refusal of the web-pusher's own pair (an unreachable WEB_PUSH_VAPID_SUBJECT) is parked as the deployment's fault, not the app's credential failure", async () => {
    const processVapid = { subject: 'mailto:ops@localhost', current: appKeys };
    // The web-pusher's own provider (apps without keys of their own), and an app's own provider signing a subscription made before it had keys.
    const fallback = await createWebPushProvider({ ...settings, vapid: undefined, processVapid }, logger);
    const appProvider = await createWebPushProvider({ ...settings, vapid: { subject: 'https://example.com/contact', current: await generateVapidKeys() }, processVapid }, logger);
    try {
      const safari = await subscribe(appKeys.publicKey, 'apple');
      for (const p of [fallback, appProvider]) {
        expect(await p.send(webPush(safari), {})).toMatchObject({
          kind: 'permanent',
          reason: expect.stringMatching(/^process-vapid-refused: .*subject "mailto:ops@localhost".*BadJwtToken/) as unknown,
        });
      }
      expect(await received(safari.endpoint)).toEqual([]);
      // The same pair reaches Chrome's; a key that is not the web-pusher's is named, not signed with the wrong pair.
      const chrome = await subscribe(appKeys.publicKey);
      expect(await fallback.send(webPush(chrome), {})).toMatchObject({ kind: 'delivered' });
      expect(await fallback.send({ ...webPush(chrome), webVapidKey: (await generateVapidKeys()).publicKey }, {})).toMatchObject({
        kind: 'permanent',
        reason: expect.stringMatching(/^vapid-key-unknown: .*not the web-pusher's WEB_PUSH_VAPID_PUBLIC_KEY/) as unknown,
      });
    } finally {
      await fallback.close();
      await appProvider.close();
    }
  });

  it('signs a subscription made under the previous key pair with that pair after a rotation, and names the rotation when neither is held', async () => {
    const old = await generateVapidKeys();
    const rotated = await createWebPushProvider({ ...settings, vapid: { subject: 'https://example.com/contact', current: await generateVapidKeys(), previous: old } }, logger);
    try {
      const sub = await subscribe(old.publicKey);
      const asOld = { ...webPush(sub), webVapidKey: old.publicKey } as DevicePush;
      expect(await rotated.send(asOld, {})).toMatchObject({ kind: 'delivered' });
      expect((await received(sub.endpoint))[0]).toMatchObject({ vapidKey: old.publicKey });
      // Registered before its contract dropped the padding a front end's encoder left: the same key.
      expect(await rotated.send({ ...asOld, webVapidKey: `${old.publicKey}=` }, {})).toMatchObject({ kind: 'delivered' });
      const lost = { ...webPush(sub), webVapidKey: (await generateVapidKeys()).publicKey } as DevicePush;
      expect(await rotated.send(lost, {})).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^vapid-key-rotated: /) });
    } finally {
      await rotated.close();
    }
  });

  // Before: those subscriptions were signed with the app's new key (403, parked VapidKeyMismatch) or parked "rotated twice".
  it("an app given keys of its own goes on signing the subscriptions made under the web-pusher's pair with that pair and its subject", async () => {
    const own = await generateVapidKeys();
    const appProvider = await createWebPushProvider(
      { ...settings, vapid: { subject: 'https://example.com/contact', current: own }, processVapid: { subject: 'mailto:ops@example.com', current: appKeys } },
      logger,
    );
    try {
      // appKeys is the process pair here: the one the app's front end subscribed with while the app had no keys.
      const before = await subscribe(appKeys.publicKey);
      const unnamed = webPush(before); // registered without applicationServerKey while the app had no keys: NULL
      const named = { ...webPush(before), webVapidKey: appKeys.publicKey } as DevicePush;
      const after = await subscribe(own.publicKey);
      const fresh = { ...webPush(after), webVapidKey: own.publicKey } as DevicePush;
      for (const push of [unnamed, named, fresh]) expect(await appProvider.send(push, {})).toMatchObject({ kind: 'delivered' });
      const got = [...(await received(before.endpoint)), ...(await received(after.endpoint))].map((p) => [p['vapidKey'], (p['claims'] as { sub: string }).sub]);
      expect(got).toEqual([
        [appKeys.publicKey, 'mailto:ops@example.com'],
        [appKeys.publicKey, 'mailto:ops@example.com'],
        [own.publicKey, 'https://example.com/contact'],
      ]);
      // A key that is neither the app's nor the web-pusher's is named as such.
      const stranger = (await generateVapidKeys()).publicKey;
      expect(await appProvider.send({ ...webPush(before), webVapidKey: stranger }, {})).toMatchObject({
        kind: 'permanent',
        reason: expect.stringMatching(/^vapid-key-unknown: .* nor the web-pusher's WEB_PUSH_VAPID_PUBLIC_KEY/) as unknown,
      });
    } finally {
      await appProvider.close();
    }
  });

  it('names a key it never signed with as unknown, not as rotated away, when the keys were never rotated', async () => {
    const sub = await subscribe(appKeys.publicKey);
    const stranger = (await generateVapidKeys()).publicKey;
    expect(await provider.send({ ...webPush(sub), webVapidKey: stranger }, {})).toEqual({
      kind: 'permanent',
      reason: `vapid-key-unknown: the subscription was made with application server key ${stranger.slice(0, 12)}…, not the key Herald signs app "demo"'s pushes with (${appKeys.publicKey.slice(0, 12)}…); the browser must subscribe with that key`,
      notSent: true,
    });
    expect(await received(sub.endpoint)).toEqual([]);
  });

  it('parks with a readable reason when there are no VAPID keys at all', async () => {
    const keyless = await createWebPushProvider({ ...settings, vapid: undefined }, logger);
    try {
      expect(await keyless.send(webPush(await subscribe()), {})).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^no-vapid-keys: app "demo"/) });
    } finally {
      await keyless.close();
    }
  });

  it('410 Gone (the browser unsubscribed) and 404 are dead tokens', async () => {
    const gone = await subscribe();
    await control('DELETE', `/web/subscriptions?endpoint=${encodeURIComponent(gone.endpoint)}`);
    expect(await provider.send(webPush(gone), {})).toEqual({ kind: 'dead-token', reason: 'Gone' });
    const missing = await subscribe();
    await fault({ token: missing.endpoint, error: 'NotFound', times: 1 });
    expect(await provider.send(webPush(missing), {})).toEqual({ kind: 'dead-token', reason: 'NotFound' });
  });

  it("429 and Microsoft's throttle, 406, with Retry-After are transient with that delay; 500 is transient; 413 is permanent", async () => {
    const sub = await subscribe();
    // Fed to the pushers' limiter as the pusher does (the app, the endpoint's host): RFC 8030 §8.4's 429 is
    // about that push resource, so it pauses nobody (the push waits its Retry-After); WNS's 406 pauses the app there.
    const limiter = await createRateLimiter({ platform: 'web', store: new MemoryRateLimitStore(), logger, registry: new Registry() });
    const service = new URL(sub.endpoint).hostname;
    await fault({ token: sub.endpoint, error: 'TooManyRequests', retryAfterSeconds: 7, times: 1 });
    const tooMany = await provider.send(webPush(sub), {});
    expect(tooMany).toMatchObject({ kind: 'transient', retryAfterMs: 7000, reason: expect.stringMatching(/^TooManyRequests/) });
    limiter.observe(tooMany, 'demo', service);
    expect(limiter.pausedFor('demo', service)).toBe(0);
    await fault({ token: sub.endpoint, error: 'NotAcceptable', retryAfterSeconds: 900, times: 1 });
    const throttled = await provider.send(webPush(sub), {});
    expect(throttled).toMatchObject({ kind: 'transient', retryAfterMs: 900_000, reason: expect.stringMatching(/^WnsThrottled: HTTP 406/) });
    limiter.observe(throttled, 'demo', service);
    expect(limiter.pausedFor('demo', service)).toBeGreaterThan(500_000); // capped at 10 min (ADR 0006)
    limiter.close();
    await fault({ token: sub.endpoint, error: 'InternalServerError', times: 1 });
    expect(await provider.send(webPush(sub), {})).toMatchObject({ kind: 'transient' });
    await fault({ token: sub.endpoint, error: 'PayloadTooLarge', times: 1 });
    expect(await provider.send(webPush(sub), {})).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^PayloadTooLarge/) });
    expect(await provider.send(webPush(sub), {})).toMatchObject({ kind: 'delivered' });
  });

  it('refuses a payload over 3,993 bytes before sending (it would exceed 4,096 encrypted)', async () => {
    const sub = await subscribe();
    const result = await provider.send(webPush(sub, { content: { title: 'x', body: 'é'.repeat(2100) } }), {});
    expect(result).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/Web Push allows 3993 bytes/) });
    expect(await received(sub.endpoint)).toEqual([]);
  });
});

describe('the sandbox push service enforces RFC 8030 / 8292 on any client', () => {
  const post = (endpoint: string, headers: Record<string, string>, body: Buffer): Promise<number> =>
    new Promise((resolve, reject) => {
      const url = new URL(endpoint);
      const ca = settings.trusted?.[0]?.ca;
      const req = request(url, { method: 'POST', headers, ...(ca !== undefined && { ca }) }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end(body);
    });

  it('answers 413 to a body over 4,096 bytes, 401 without VAPID, 404 for an unknown subscription', async () => {
    const sub = await subscribe();
    const headers = { ttl: '60', 'content-encoding': 'aes128gcm' };
    expect(await post(sub.endpoint, headers, Buffer.alloc(4097))).toBe(413);
    expect(await post(sub.endpoint, headers, Buffer.alloc(200))).toBe(401);
    expect(await post(`${sub.endpoint}x`, headers, Buffer.alloc(200))).toBe(404);
  });
});
