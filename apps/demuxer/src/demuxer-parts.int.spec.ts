import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendQueueFor, type PushJobInput } from '@herald/contracts';
import type { TargetRequest } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, type Broker, type InboundMessage } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, createTestVhost, waitFor, type TestDatabase, type TestVhost } from '@herald/testing';
import { createDemuxerHandler, type DemuxerDeps } from './demuxer.ts';
import { createDemuxerMetrics } from './demuxer-metrics.ts';
import { WaveMonitor } from './wave-monitor.ts';

const logger = createLogger({ service: 'demuxer-parts-test', level: 'silent' });
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;
beforeAll(async () => {
  t = await createTestDatabase('demuxparts');
  vhost = await createTestVhost('demuxparts');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'demuxer-parts-test' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
  await t.db.apps.upsert({ id: 'parts', apnsTopic: 'com.herald.parts' });
  // Users u0 … u11, one APNs device each.
  for (let u = 0; u < 12; u++) {
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: u.toString(16).padStart(2, '0').repeat(32), userId: `u${u}`, eventAt: '2025-01-01T00:00:00Z' });
  }
});
afterAll(async () => {
  await broker.close();
  await vhost.delete();
  await t.drop();
});

const message = (job: PushJobInput): InboundMessage => ({
  body: Buffer.from(JSON.stringify({ ...job, acceptedAt: new Date().toISOString() })),
  headers: {},
  routingKey: 'push.jobs',
  redelivered: false,
  attempt: 1,
  queue: 'push.jobs',
});
/** The demuxer on the real repositories, store and broker. */
const demuxer = (deps: Partial<DemuxerDeps>) =>
  createDemuxerHandler({
    targets: t.db.devices,
    apps: t.db.apps,
    publisher: broker.publisher,
    scheduling: { store: t.db.scheduled, wave: new WaveMonitor(2000, 60), horizonDays: 366, slackMs: 1000 },
    metrics: createDemuxerMetrics(new Registry()),
    logger,
    jobs: t.db.jobs,
    ...deps,
  });
const jobFor = (users: number[]): PushJobInput => ({ id: randomUUID(), app: 'parts', category: 'social', content: { title: 'Hi' }, userIds: users.map((u) => `u${u}`) });

describe('demuxer batch parts (DEMUXER_BATCH_USERS)', () => {
  it('targets and publishes a batch in parts of at most that many users, a larger job alone, every push emitted', async () => {
    const targeted: number[] = [];
    const handle = demuxer({
      // The real repository; each call's users are noted.
      targets: { findAudience: (requests: readonly TargetRequest[], now: Date) => (targeted.push(requests.reduce((n, r) => n + r.userIds.length, 0)), t.db.devices.findAudience(requests, now)) },
      partUsers: 4,
    });
    const jobs = [jobFor([0, 1]), jobFor([2, 3]), jobFor([4]), jobFor([5, 6, 7, 8, 9, 10]), jobFor([11])];
    expect(await handle(jobs.map(message))).toEqual(jobs.map(() => ({ kind: 'ack' })));
    // 2 + 2 fill a part; 1 starts the next, which the 6-user job cannot join; that job goes alone, then 1.
    expect(targeted).toEqual([4, 1, 6, 1]);
    // Every push confirmed before the acks; the queue's count may trail the confirms by a moment.
    const ready = async () => (await broker.queueCounts([sendQueueFor('apns')])).get(sendQueueFor('apns'))?.ready;
    await waitFor('12 pushes in the send queue', async () => ((await ready()) === 12 ? true : undefined), { timeoutMs: 5_000 }).catch(() => undefined);
    expect(await ready()).toBe(12);
    const status = await Promise.all(jobs.map((j) => t.db.jobs.get(j.id)));
    expect(status.map((s) => s?.targeted)).toEqual([2, 2, 1, 6, 1]);
  });

  it("a job stamped by a producer clock running ahead counts as accepted now: a local time minutes away goes out today, not tomorrow", async () => {
    const now = new Date();
    const handle = demuxer({ now: () => now });
    const inFive = new Date(now.getTime() + 5 * 60_000);
    const localTime = `${String(inFive.getUTCHours()).padStart(2, '0')}:${String(inFive.getUTCMinutes()).padStart(2, '0')}`;
    const job = { ...jobFor([0]), deliverAt: { localTime }, acceptedAt: new Date(now.getTime() + 10 * 60_000).toISOString() };
    expect(await handle([{ ...message(job), body: Buffer.from(JSON.stringify(job)) }])).toEqual([{ kind: 'ack' }]);
    const [row] = await t.db.kysely.selectFrom('scheduled_pushes').select('due_at').where('job_id', '=', job.id).execute();
    expect(row?.due_at.getTime()).toBeGreaterThan(now.getTime());
    expect(row?.due_at.getTime()).toBeLessThanOrEqual(inFive.getTime()); // the device is in UTC (no timezone): today's, not tomorrow's
  });
});
