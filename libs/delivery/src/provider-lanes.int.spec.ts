/**
 * A provider that answers nothing, through the pusher (pusher.ts) with its lanes (provider-lanes.ts),
 * against PostgreSQL (the ledger, the app's row) and RabbitMQ: its pushes are held, deferred without
 * spending an attempt and neither claimed nor sent while the lane is down, parked once held past
 * PROVIDER_DOWN_HOLD_MS, and sent again once a trial is answered.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { sendQueueFor, type DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, type Broker, type InboundMessage } from '@herald/messaging';
import type { SendResult } from '@herald/providers';
import { Registry } from '@herald/runtime';
import { createTestDatabase, createTestVhost, type TestDatabase, type TestVhost } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleProvider } from './provider-pool.ts';
import { ProviderLanes } from './provider-lanes.ts';
import { createPusherHandler, PROVIDER_DOWN, SENT_BEFORE_HEADER, type PusherDeps } from './pusher.ts';
import { createPusherMetrics } from './pusher-metrics.ts';

const logger = createLogger({ service: 'provider-lanes-spec', level: 'silent', format: 'json' });
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;
beforeAll(async () => {
  t = await createTestDatabase('lanes');
  vhost = await createTestVhost('lanes');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'provider-lanes-spec' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
});
afterAll(async () => {
  await broker?.close();
  await vhost?.delete();
  await t?.drop();
});

const HOLD_MS = 3_600_000;
const push = (app: string, acceptedAt = new Date()): DevicePush => ({
  version: 1,
  pushId: randomUUID(),
  jobId: `job-${randomUUID()}`,
  deviceId: `spec-${randomUUID()}`,
  app,
  platform: 'apns',
  token: randomBytes(32).toString('hex'),
  userId: 'u1',
  content: { title: 'Hi' },
  priority: 'high',
  acceptedAt: acceptedAt.toISOString(),
});
const inbound = (p: DevicePush, attempt = 1, headers: Record<string, unknown> = {}): InboundMessage => ({
  body: Buffer.from(JSON.stringify(p)),
  headers,
  routingKey: sendQueueFor('apns'),
  redelivered: false,
  attempt,
  queue: sendQueueFor('apns'),
});

/** The pusher with `lanes`, sending through `send`, on the spec's PostgreSQL and RabbitMQ (two attempts a push). */
const pusherOf = (lanes: ProviderLanes, send: (p: DevicePush) => Promise<SendResult>, metrics = createPusherMetrics(new Registry()), limiter?: PusherDeps['limiter']) =>
  createPusherHandler({
    ...(limiter !== undefined && { limiter }),
    platform: 'apns',
    lastAttempt: 2,
    providers: singleProvider({ platform: 'apns', send, close: async () => undefined }),
    lanes,
    ledger: t.db.ledger,
    apps: t.db.apps,
    publisher: broker.publisher,
    metrics,
    logger,
    owner: 'provider-lanes-spec',
    leaseMs: 30_000,
  });

describe('a provider that answers nothing: its pushes are held, not retried on the schedule and parked', () => {
  it('holds a down lane’s pushes unsent with no attempt spent, parks one held past the hold, and sends again after an answered trial', async () => {
    const app = await t.db.apps.upsert({ id: `lanes-${randomUUID().slice(0, 8)}`, apnsTopic: 'com.herald.spec' });
    let answer: SendResult = { kind: 'transient', reason: 'transport: connect ECONNREFUSED', outage: true };
    const sent: string[] = [];
    const registry = new Registry();
    const metrics = createPusherMetrics(registry);
    const lanes = new ProviderLanes({ holdMs: HOLD_MS, probeMs: 1_000, minSends: 5, afterMs: 0, quietMs: 60_000 }, 'apns', logger, metrics.laneDown);
    let budgetTaken = 0;
    const handle = pusherOf(
      lanes,
      async (p) => {
        sent.push(p.pushId);
        return answer;
      },
      metrics,
      { acquire: async () => (budgetTaken += 1) > 0 },
    );
    const ledgerOf = async (ids: string[]): Promise<unknown[]> =>
      (await t.db.kysely.selectFrom('delivery_ledger').select('state').where('push_id', 'in', ids).execute()).map((r) => r.state);
    try {
      // Six sends in one batch, all unanswered: the lane goes down with them, and none is retried
      // (an attempt spent, parked when the schedule runs out): every one is held, its claim released.
      const first = Array.from({ length: 6 }, () => push(app.id));
      const outcomes = await handle(first.map((p) => inbound(p)));
      expect(sent).toHaveLength(6);
      expect(outcomes.map((o) => [o.kind, 'code' in o ? o.code : undefined])).toEqual(Array(6).fill(['defer', PROVIDER_DOWN]));
      expect(outcomes[0]).toMatchObject({ delayMs: 1_000, spread: true, reason: expect.stringMatching(/^apns \(shared connection\) has answered nothing or server errors since .*: held, no attempt spent$/) });
      // Sent, so marked: back, its answer is not its lane's judge (a push failing alone would keep it down).
      expect(outcomes.map((o) => (o.kind === 'defer' ? o.headers : undefined))).toEqual(Array(6).fill({ [SENT_BEFORE_HEADER]: 1 }));
      expect(await ledgerOf(first.map((p) => p.pushId))).toEqual([]);
      expect(lanes.down('apns (shared connection)')).toBe(true);

      // Down: what comes is held as it comes, not claimed or sent; one due longer ago than the hold is parked.
      const later = push(app.id);
      const stale = push(app.id, new Date(Date.now() - HOLD_MS - 1_000));
      const [held, parked] = await handle([inbound(later), inbound(stale)]);
      expect(sent).toHaveLength(6);
      expect(held).toMatchObject({ kind: 'defer', code: PROVIDER_DOWN });
      expect(held).not.toHaveProperty('headers');
      // Neither took a rate-limit token (the one past its hold went on to its claim, to be parked there).
      expect(budgetTaken).toBe(6);
      expect(parked).toMatchObject({ kind: 'park', code: PROVIDER_DOWN, reason: expect.stringContaining('replay it once the provider answers') });
      expect(await ledgerOf([later.pushId])).toEqual([]);
      expect((await registry.getSingleMetric('herald_provider_lane_down')?.get())?.values).toEqual([
        { labels: { platform: 'apns', lane: 'apns (shared connection)' }, value: 1 },
      ]);

      // Due its trial, a push past its hold is that trial: sent, failed, parked marked sent before
      // (its replay, attempt 1 again, is no fresh judge of the lane).
      await new Promise((r) => setTimeout(r, 1_200));
      const staleTrial = push(app.id, new Date(Date.now() - HOLD_MS - 1_000));
      expect(await handle([inbound(staleTrial)])).toEqual([{ kind: 'park', code: PROVIDER_DOWN, reason: expect.any(String), headers: { [SENT_BEFORE_HEADER]: 1 } }]);
      expect(sent).toHaveLength(7);

      // The provider is back: after the probe interval one push tries the lane, and is delivered.
      answer = { kind: 'delivered' };
      await new Promise((r) => setTimeout(r, 1_200));
      // The one beside that trial is held too, and back in a second: the lane answers by then.
      const beside = push(app.id);
      expect(await handle([inbound(later), inbound(beside)])).toEqual([{ kind: 'ack' }, expect.objectContaining({ kind: 'defer', code: PROVIDER_DOWN, delayMs: 1_000 })]);
      expect(sent).toHaveLength(8);
      expect(await ledgerOf([later.pushId])).toEqual(['done']);
      expect(lanes.down('apns (shared connection)')).toBe(false);
      expect(await handle(first.map((p) => inbound(p)))).toEqual(Array(6).fill({ kind: 'ack' }));
      expect(sent).toHaveLength(14);
    } finally {
      lanes.close();
    }
  });

  it('a push held past its bound that was delivered before is acked as the duplicate it is, not parked for a replay to send again', async () => {
    const app = await t.db.apps.upsert({ id: `lanes-${randomUUID().slice(0, 8)}`, apnsTopic: 'com.herald.spec' });
    let answer: SendResult = { kind: 'delivered' };
    const lanes = new ProviderLanes({ holdMs: HOLD_MS, probeMs: 60_000, minSends: 5, afterMs: 0, quietMs: 60_000 }, 'apns', logger);
    const handle = pusherOf(lanes, async () => answer);
    try {
      const stale = push(app.id, new Date(Date.now() - HOLD_MS - 1_000));
      expect(await handle([inbound(stale)])).toEqual([{ kind: 'ack' }]);
      answer = { kind: 'transient', reason: 'transport: connect ETIMEDOUT', outage: true };
      await handle(Array.from({ length: 10 }, () => inbound(push(app.id))));
      expect(lanes.down('apns (shared connection)')).toBe(true);
      // Its copy (a packed message's redelivery, a replay) comes back during the outage.
      const [again] = await handle([inbound(stale, 1, { [SENT_BEFORE_HEADER]: 1 })]);
      expect(again).toEqual({ kind: 'ack' });
    } finally {
      lanes.close();
    }
  });

  it.each([
    ['without lanes (PROVIDER_DOWN_HOLD_MS 0)', 0, 1, {}],
    ['with lanes, for retries: pushes failing alone, again and again, in a quiet lane, do not take it down', HOLD_MS, 2, {}],
    ['with lanes, for pushes back from a hold after their send: likewise', HOLD_MS, 1, { [SENT_BEFORE_HEADER]: 1 }],
  ])('%s, an unanswered push is retried on the schedule', async (_, holdMs, attempt, headers) => {
    const app = await t.db.apps.upsert({ id: `lanes-${randomUUID().slice(0, 8)}`, apnsTopic: 'com.herald.spec' });
    const lanes = new ProviderLanes({ holdMs, probeMs: 1_000, minSends: 5, afterMs: 0, quietMs: 60_000 }, 'apns', logger);
    const handle = pusherOf(lanes, async () => ({ kind: 'transient', reason: 'transport: reset', outage: true }));
    const outcomes = await handle(Array.from({ length: 12 }, () => inbound(push(app.id), attempt, headers)));
    expect(outcomes).toEqual(Array(12).fill({ kind: 'retry', code: 'transient', reason: 'transport: reset', headers: { [SENT_BEFORE_HEADER]: 1 } }));
    expect(lanes.down('apns (shared connection)')).toBe(false);
    lanes.close();
  });
});
