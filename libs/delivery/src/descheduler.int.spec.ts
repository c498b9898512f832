import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { derivePushId, sendQueueFor, type DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, type Broker, type Publisher } from '@herald/messaging';
import { Registry, TIMED_OUT, within } from '@herald/runtime';
import { createTestDatabase, createTestVhost, peekMessages, waitFor, type TestDatabase, type TestVhost } from '@herald/testing';
import { startDescheduler } from './descheduler.ts';
import { createDeschedulerMetrics } from './descheduler-metrics.ts';

const logger = createLogger({ service: 'descheduler-test', level: 'silent' });
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;
beforeAll(async () => {
  t = await createTestDatabase('desched');
  vhost = await createTestVhost('desched');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'descheduler-test' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
});
afterAll(async () => {
  await broker.close();
  await vhost.delete();
  await t.drop();
});

const push = (deviceId: string, extra: Partial<DevicePush> = {}): DevicePush => ({
  version: 1,
  pushId: derivePushId('job-desched', deviceId),
  jobId: 'job-desched',
  deviceId,
  app: 'demo',
  platform: 'apns',
  token: `token-${deviceId}`,
  userId: 'u1',
  content: { title: 'Good morning' },
  priority: 'high',
  acceptedAt: new Date().toISOString(),
  ...extra,
});

describe('descheduler', () => {
  it('publishes due pushes byte for byte as scheduled, with their push id; drops and counts the expired ones', async () => {
    const live = push('1', { content: { title: 'é ✓ "quoted"', body: 'line\nbreak' } });
    const traced = push('2', { trace: true, expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    const expired = push('3', { expiresAt: new Date(Date.now() - 1_000).toISOString() });
    await t.db.scheduled.schedule([live, traced, expired].map((p) => ({ dueAt: new Date(Date.now() - 500), push: p })));

    const metrics = createDeschedulerMetrics(new Registry());
    const descheduler = startDescheduler({
      platform: 'apns',
      store: t.db.scheduled,
      publisher: broker.publisher,
      metrics,
      logger,
      batchSize: 10,
      recheckMs: 30_000,
      errorBackoffMs: 1_000,
    });
    try {
      await waitFor('the store to empty', async () =>
        (await t.db.scheduled.nextDueAt('apns')) === undefined ? true : undefined,
      );
      const ready = async () => (await broker.queueCounts([sendQueueFor('apns')])).get(sendQueueFor('apns'))?.ready;
      await waitFor('two messages in the send queue', async () => ((await ready()) === 2 ? true : undefined));
    } finally {
      await descheduler.stop();
    }
    const messages = await peekMessages(vhost.name, sendQueueFor('apns'));
    const byId = new Map(messages.map((m) => [m.properties.message_id, m]));
    expect([...byId.keys()].sort()).toEqual([live.pushId, traced.pushId].sort());
    expect(byId.get(live.pushId)?.payload).toBe(JSON.stringify(live));
    expect(byId.get(traced.pushId)?.payload).toBe(JSON.stringify(traced));
    expect(messages.map((m) => (m.properties as { content_type?: string }).content_type)).toEqual([
      'application/json',
      'application/json',
    ]);
    const counts = Object.fromEntries((await metrics.pushes.get()).values.map((v) => [v.labels['outcome'], v.value]));
    expect(counts).toEqual({ released: 2, expired: 1 });
    // The expired push is its job's outcome, committed with the release; the released ones are in flight.
    const outcomes = await t.db.jobs.pushes('job-desched', { limit: 10 });
    expect(outcomes).toEqual([expect.objectContaining({ pushId: expired.pushId, outcome: 'expired', platform: 'apns', deviceId: '3' })]);
  });

  it('drops the pushes of a job cancelled while they were stored, and counts them by why', async () => {
    const jobId = 'job-cancelled-while-stored';
    const stored = ['a', 'b'].map((d) => push(d, { jobId, pushId: derivePushId(jobId, d) }));
    await t.db.scheduled.schedule(stored.map((p) => ({ dueAt: new Date(Date.now() - 500), push: p })));
    await t.db.kysely.insertInto('jobs').values({ id: jobId, app: 'demo', published_at: new Date(), cancelled_at: new Date() }).execute();
    const metrics = createDeschedulerMetrics(new Registry());
    const descheduler = startDescheduler({ platform: 'apns', store: t.db.scheduled, publisher: broker.publisher, metrics, logger, batchSize: 10, recheckMs: 30_000, errorBackoffMs: 1_000 });
    try {
      await waitFor('the store to empty', async () => ((await t.db.scheduled.nextDueAt('apns')) === undefined ? true : undefined));
    } finally {
      await descheduler.stop();
    }
    const counts = Object.fromEntries((await metrics.pushes.get()).values.map((v) => [v.labels['outcome'], v.value]));
    expect(counts).toEqual({ cancelled: 2 });
    expect((await t.db.jobs.pushes(jobId, { limit: 10 })).map((o) => o.outcome)).toEqual(['cancelled', 'cancelled']);
  });

  it("given a bound, stops though RabbitMQ never confirms its batch's publish (an alarm): the batch is rolled back and its pushes stay stored", async () => {
    const jobId = 'job-unconfirmed';
    const stored = ['x', 'y'].map((d) => push(d, { jobId, pushId: derivePushId(jobId, d), platform: 'fcm', token: `fcm-token-${d}-${'x'.repeat(40)}` }));
    await t.db.scheduled.schedule(stored.map((p) => ({ dueAt: new Date(Date.now() - 500), push: p })));
    let publishes = 0;
    const unconfirmed: Publisher = {
      publish: () => new Promise<void>(() => undefined),
      publishMany: () => {
        publishes++;
        return new Promise<void>(() => undefined);
      },
    };
    const metrics = createDeschedulerMetrics(new Registry());
    const descheduler = startDescheduler({ platform: 'fcm', store: t.db.scheduled, publisher: unconfirmed, metrics, logger, batchSize: 10, recheckMs: 30_000, errorBackoffMs: 1_000 });
    await waitFor('the batch to be claimed and published', () => publishes > 0);
    expect(await within(descheduler.stop(200), 10_000)).not.toBe(TIMED_OUT);
    const left = await t.db.kysely.selectFrom('scheduled_pushes').select('push_id').where('job_id', '=', jobId).execute();
    expect(left.map((r) => r.push_id).sort()).toEqual(stored.map((p) => p.pushId).sort());
    // Given up by the stop, not failed: nothing counted released, nor a failed batch (HeraldDeschedulerFailing).
    expect((await metrics.batches.get()).values.filter((v) => v.value > 0)).toEqual([]);
  });
});
