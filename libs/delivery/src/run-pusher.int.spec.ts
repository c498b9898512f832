import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '@herald/config';
import { derivePushId, Exchanges, sendQueueFor, type DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, type Broker, type EachPublisher, type Publisher } from '@herald/messaging';
import type { PushProvider } from '@herald/providers';
import { Registry, TIMED_OUT, within } from '@herald/runtime';
import { createTestDatabase, createTestVhost, waitFor, type TestDatabase, type TestVhost } from '@herald/testing';
import { startStoreDescheduler } from './in-process-descheduler.ts';
import { pusherConfig } from './pusher-config.ts';
import { startPusher } from './run-pusher.ts';

const logger = createLogger({ service: 'run-pusher-test', level: 'silent' });
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;
beforeAll(async () => {
  t = await createTestDatabase('pusherstop');
  vhost = await createTestVhost('pusherstop');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'run-pusher-test' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
  await t.db.apps.upsert({ id: 'demo' });
});
afterAll(async () => {
  await broker.close();
  await vhost.delete();
  await t.drop();
});

const push = (jobId: string, deviceId: string): DevicePush => ({
  version: 1,
  pushId: derivePushId(jobId, deviceId),
  jobId,
  deviceId,
  app: 'demo',
  platform: 'fcm',
  token: `fcm-token-${deviceId}-${'x'.repeat(40)}`,
  userId: 'u1',
  content: { title: 'Good morning' },
  priority: 'high',
  acceptedAt: new Date().toISOString(),
});

/**
 * A publisher RabbitMQ blocks, as in a memory or disk alarm: what it is given is never confirmed
 * until the test lets go of it (`fail`).
 */
function blockedPublisher(): Publisher & EachPublisher & { calls: number; fail(): void } {
  const waiting: Array<(err: Error) => void> = [];
  const hold = (): Promise<never> => new Promise<never>((_, reject) => waiting.push(reject));
  return {
    calls: 0,
    publish() {
      this.calls++;
      return hold();
    },
    publishMany() {
      this.calls++;
      return hold();
    },
    publishEach() {
      this.calls++;
      return hold();
    },
    fail: () => waiting.splice(0).forEach((reject) => reject(new Error('test over'))),
  };
}

/** `real` with `publisher` in place of its own (what the work beside the consumer publishes with). */
const publishingWith = (real: Broker, publisher: Publisher & EachPublisher): Broker => ({
  publisher,
  consume: (options) => real.consume(options),
  applyTopology: (topology) => real.applyTopology(topology),
  queueCounts: (queues) => real.queueCounts(queues),
  health: () => real.health(),
  close: () => real.close(),
});

const QUEUED = 150;
const SEND_MS = 30;
const STOP_BOUND_MS = 3_000;

describe("a pusher's stop", () => {
  it("takes no push once it begins and ends within its bound, while its descheduler's publish waits for a confirm that never comes", async () => {
    // Due pushes its in-process descheduler claims and publishes: RabbitMQ never confirms them.
    const scheduled = ['s1', 's2', 's3'].map((d) => push('job-scheduled', d));
    await t.db.scheduled.schedule(scheduled.map((p) => ({ dueAt: new Date(Date.now() - 500), push: p })));
    // A backlog on the send queue, sent one at a time, each send taking SEND_MS.
    const queued = Array.from({ length: QUEUED }, (_, i) => push('job-queued', `q${i}`));
    await broker.publisher.publishMany(queued.map((p) => ({ exchange: Exchanges.direct, routingKey: sendQueueFor('fcm'), body: p, messageId: p.pushId })));

    const sendsAt: number[] = [];
    const provider: PushProvider = {
      platform: 'fcm',
      send: async () => {
        sendsAt.push(Date.now());
        await sleep(SEND_MS);
        return { kind: 'delivered' };
      },
      close: async () => undefined,
    };
    const blocked = blockedPublisher();
    const config = {
      ...loadConfig(pusherConfig, {
        AMQP_URL: vhost.amqpUrl,
        DATABASE_URL: t.url,
        DATABASE_SCHEMA: t.schema,
        RATE_LIMIT_ENABLED: 'false',
        PUSHER_PREFETCH: '1',
        PUSHER_BATCH_SIZE: '1',
        PUSHER_BATCH_WAIT_MS: '0',
      }),
      DESCHEDULER_HELD_BATCH_TIMEOUT_MS: 60_000,
    };
    const deschedulerSettings = { DESCHEDULER_BATCH_SIZE: 10, DESCHEDULER_CONCURRENCY: 1, DESCHEDULER_RECHECK_MS: 30_000, DESCHEDULER_ERROR_BACKOFF_MS: 1_000 };
    const service = await startPusher(
      'fcm',
      config,
      async () => provider,
      { logger, registry: new Registry(), stopping: new AbortController().signal, waiting: () => undefined },
      (parts) => startStoreDescheduler('fcm', deschedulerSettings, { ...parts, broker: publishingWith(parts.broker, blocked) }),
    );
    let stopped: Promise<void> | undefined;
    try {
      await waitFor("the descheduler's batch to wait for its confirms", () => blocked.calls > 0);
      await waitFor('the pusher to be sending', () => sendsAt.length >= 5);

      const began = Date.now();
      stopped = service.stop(STOP_BOUND_MS);
      const ended = await within(stopped, STOP_BOUND_MS + 2_000);
      const tookMs = Date.now() - began;

      // At most the one push already taken (PUSHER_PREFETCH 1) is sent after the stop began.
      expect(sendsAt.filter((at) => at >= began).length).toBeLessThanOrEqual(1);
      expect(ended).not.toBe(TIMED_OUT);
      expect(tookMs).toBeLessThan(STOP_BOUND_MS + 1_000);
    } finally {
      // Lets a stop that hung on the descheduler go on, so the test ends either way.
      blocked.fail();
      await (stopped ?? service.stop(STOP_BOUND_MS));
    }
    // The unconfirmed batch was rolled back: its pushes are still stored, for the next release.
    const stored = await t.db.kysely.selectFrom('scheduled_pushes').select('push_id').where('job_id', '=', 'job-scheduled').execute();
    expect(stored.map((r) => r.push_id).sort()).toEqual(scheduled.map((p) => p.pushId).sort());
    // Nothing taken was lost: every push not sent is back on the send queue.
    await waitFor('the unsent pushes back on the send queue', async () => {
      const ready = (await broker.queueCounts([sendQueueFor('fcm')])).get(sendQueueFor('fcm'))?.ready;
      return ready === QUEUED - sendsAt.length;
    });
  });
});

describe("a pusher's clock", () => {
  it("is PostgreSQL's, and its provider's: on a host two minutes fast, a push with a minute to go is sent, not dropped as expired, with a minute to live", async () => {
    // Due in a minute by PostgreSQL's clock (this test shares its host, so the real clock is PostgreSQL's).
    const expiring = { ...push('job-clock', 'c1'), expiresAt: new Date(Date.now() + 60_000).toISOString() };
    const sent: string[] = [];
    // What the provider would count the push's time to live from (FCM's android.ttl, Web Push's TTL).
    const remainingMs = new Map<string, number>();
    let providerNow: (() => Date) | undefined;
    const provider: PushProvider = {
      platform: 'fcm',
      send: async (p) => (sent.push(p.pushId), remainingMs.set(p.pushId, Date.parse(p.expiresAt ?? '') - (providerNow?.() ?? new Date()).getTime()), { kind: 'delivered' }),
      close: async () => undefined,
    };
    const config = loadConfig(pusherConfig, { AMQP_URL: vhost.amqpUrl, DATABASE_URL: t.url, DATABASE_SCHEMA: t.schema, RATE_LIMIT_ENABLED: 'false' });
    // The host's clock (Date, new Date()) runs two minutes ahead from here on; timers are real.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 120_000, shouldAdvanceTime: true });
    let service: Awaited<ReturnType<typeof startPusher>> | undefined;
    try {
      service = await startPusher('fcm', config, async (_logger, limits) => ((providerNow = limits.now), provider), { logger, registry: new Registry(), stopping: new AbortController().signal, waiting: () => undefined });
      await broker.publisher.publish({ exchange: Exchanges.direct, routingKey: sendQueueFor('fcm'), body: expiring, messageId: expiring.pushId });
      const outcome = await waitFor("the push's outcome", async () =>
        (await t.db.kysely.selectFrom('push_outcomes').select('outcome').where('push_id', '=', expiring.pushId).executeTakeFirst())?.outcome,
      );
      expect(outcome).toBe('delivered');
      expect(sent).toContain(expiring.pushId);
      // The provider is given the same clock: about a minute left, not a minute past.
      expect(remainingMs.get(expiring.pushId)).toBeGreaterThan(30_000);
      expect(remainingMs.get(expiring.pushId)).toBeLessThanOrEqual(60_000);
    } finally {
      await service?.stop(STOP_BOUND_MS);
      vi.useRealTimers();
    }
  });
});
