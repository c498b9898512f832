/**
 * A push Herald refuses without making a request (SendResult's notSent) through the web-pusher:
 * pusher.ts, its claim in PostgreSQL, the fleet's rate limiter over PostgreSQL and the real Web
 * Push provider, against a push service of the spec's own. Refused by its checks (a payload over
 * Web Push's size), it is parked as before but takes none of its app's budget, so the app's real
 * pushes are not held behind a stream of them; refused on its way (an endpoint whose address is not
 * public, found at connect), it is no provider request in herald_provider_request_seconds.
 */
import { createECDH, randomBytes, randomUUID } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { sendQueueFor, type DevicePush } from '@herald/contracts';
import { createAppCredentialStore } from '@herald/db';
import { createLogger } from '@herald/logging';
import type { InboundMessage } from '@herald/messaging';
import { createWebPushProvider, generateVapidKeys, type PushProvider } from '@herald/providers';
import { createRateLimiter } from '@herald/rate-limiter';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_REJECTED } from './park-outcomes.ts';
import { singleProvider } from './provider-pool.ts';
import { createPusherHandler } from './pusher.ts';
import { createPusherMetrics } from './pusher-metrics.ts';

const logger = createLogger({ service: 'pusher-refusals-spec', level: 'silent', format: 'json' });
const vapid = { subject: 'mailto:ops@example.com', current: await generateVapidKeys() };
let t: TestDatabase;
let service: https.Server;
let port: number;
let ca: string;
/** Requests the push service took. */
let requests = 0;

beforeAll(async () => {
  t = await createTestDatabase('refusals');
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }],
  });
  ca = pems.cert;
  service = https.createServer({ cert: pems.cert, key: pems.private }, (req, res) => {
    requests += 1;
    req.resume().on('end', () => res.writeHead(201, { location: `/m/${requests}` }).end());
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  port = (service.address() as AddressInfo).port;
});
afterAll(async () => {
  service?.closeAllConnections();
  service?.close();
  await t?.drop();
});

/**
 * The web-pusher's handler for a fresh app on the spec's push service (https://localhost:<port>,
 * trusted as the sandbox is), its app limited to `ratePerSec` by the fleet's limiter over
 * PostgreSQL; the pusher's and the limiter's metrics in `registry`.
 */
async function webPusher(ratePerSec: number, wrap: (provider: PushProvider) => PushProvider = (provider) => provider) {
  const app = `refusals-${randomUUID().slice(0, 8)}`;
  await t.db.apps.upsert({ id: app });
  await createAppCredentialStore(t.db.kysely, undefined).updateWebPush(app, { hosts: ['localhost'] });
  await t.db.rateLimits.set({ platform: 'web', app }, ratePerSec);
  const registry = new Registry();
  const limiter = await createRateLimiter({ platform: 'web', store: t.db.rateLimits, logger, registry });
  const provider = await createWebPushProvider({ vapid, trusted: [{ host: 'localhost', port, ca }], requestTimeoutMs: 5_000 }, logger);
  const handle = createPusherHandler({
    platform: 'web',
    providers: singleProvider(wrap(provider)),
    ledger: t.db.ledger,
    apps: t.db.apps,
    // A delivered or parked push publishes nothing (an invalidation would).
    publisher: { publish: () => Promise.reject(new Error('nothing to publish')), publishMany: () => Promise.reject(new Error('nothing to publish')) },
    metrics: createPusherMetrics(registry),
    logger,
    owner: 'pusher-refusals-spec',
    leaseMs: 30_000,
    limiter,
  });
  const close = async (): Promise<void> => {
    limiter.close();
    await provider.close();
  };
  return { app, handle, registry, close };
}

/** A push of `app` to a browser subscribed at `endpoint` (a device the claim does not look up: only the send decides). */
function webPush(app: string, endpoint: string, content: DevicePush['content'] = { title: 'Your order shipped' }): DevicePush {
  const browser = createECDH('prime256v1');
  browser.generateKeys();
  return {
    version: 1,
    pushId: randomUUID(),
    jobId: `job-${randomUUID()}`,
    deviceId: `spec-${randomUUID()}`,
    app,
    platform: 'web',
    token: `${endpoint}/push/${randomUUID()}`,
    webKeys: { p256dh: browser.getPublicKey('base64url'), auth: randomBytes(16).toString('base64url') },
    userId: 'u1',
    content,
    priority: 'high',
    acceptedAt: new Date().toISOString(),
  };
}

const delivery = (push: DevicePush): InboundMessage => ({ body: Buffer.from(JSON.stringify(push)), headers: {}, routingKey: sendQueueFor('web'), redelivered: false, attempt: 1, queue: sendQueueFor('web') });

/** herald_provider_request_seconds' count of web requests (0: none observed), and the limiter's tokens spent. */
async function counted(registry: Registry): Promise<{ requests: number; spent: number }> {
  const text = await registry.metrics();
  const value = (series: string): number => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  return { requests: value('herald_provider_request_seconds_count{platform="web"}'), spent: value('herald_rate_limit_spent_total{platform="web"}') };
}

describe('a push Herald refuses without a request', () => {
  it("takes none of its app's budget: parked as before, and the app's real push behind a batch of them goes at once, the only token spent", async () => {
    const p = await webPusher(10);
    try {
      // Over Web Push's 4,096 bytes once encrypted: refused by the provider's checks.
      const oversize = { title: 't'.repeat(2_000), body: 'b'.repeat(4_000) };
      const refused = Array.from({ length: 6 }, () => webPush(p.app, `https://localhost:${port}`, oversize));
      const real = webPush(p.app, `https://localhost:${port}`);
      const before = requests;
      const outcomes = await p.handle([...refused, real].map(delivery));
      const parked = { kind: 'park', code: PROVIDER_REJECTED, reason: expect.stringMatching(/^payload is \d+ bytes; Web Push allows \d+ bytes of JSON/) as unknown };
      expect(outcomes).toEqual([...refused.map(() => parked), { kind: 'ack' }]);
      expect(requests - before).toBe(1);
      // At 10/s, an app's pushes beyond the 2.5 its budget serves in 250 ms are deferred to their
      // turn: six refused pushes taking tokens deferred themselves and the real one.
      expect(await counted(p.registry)).toEqual({ requests: 1, spent: 1 });
    } finally {
      await p.close();
    }
  });

  it('refused on its way, at connect (its endpoint resolves to no public address), is parked naming the address and is no provider request', async () => {
    const p = await webPusher(1_000);
    try {
      // localhost on a port not trusted as the push service's: resolved, and refused before any connection.
      const inside = webPush(p.app, `https://localhost:${port + 1}`);
      const real = webPush(p.app, `https://localhost:${port}`);
      const before = requests;
      const outcomes = await p.handle([inside, real].map(delivery));
      expect(outcomes).toEqual([
        { kind: 'park', code: PROVIDER_REJECTED, reason: expect.stringMatching(/^endpoint-address-refused: localhost resolves to /) as unknown },
        { kind: 'ack' },
      ]);
      expect(requests - before).toBe(1);
      expect((await counted(p.registry)).requests).toBe(1);
    } finally {
      await p.close();
    }
  });

  // A bug in building the request, thrown by prepare before the limiter, failed the whole batch (its claims and outcomes with it).
  it('a prepare that throws leaves the checks to send, as before prepare: the batch is sent and the refusal still parked', async () => {
    const p = await webPusher(1_000, (provider) => ({
      ...provider,
      prepare: () => {
        throw new Error('a bug in building the request');
      },
    }));
    try {
      const oversize = webPush(p.app, `https://localhost:${port}`, { title: 't'.repeat(2_000), body: 'b'.repeat(4_000) });
      const real = webPush(p.app, `https://localhost:${port}`);
      const outcomes = await p.handle([oversize, real].map(delivery));
      expect(outcomes).toEqual([{ kind: 'park', code: PROVIDER_REJECTED, reason: expect.stringMatching(/^payload is \d+ bytes/) as unknown }, { kind: 'ack' }]);
    } finally {
      await p.close();
    }
  });
});
