import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queues, type PushJobInput } from '@herald/contracts';
import { createFanoutRepository } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, type Broker, type InboundMessage } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, createTestVhost, waitFor, type TestDatabase, type TestVhost } from '@herald/testing';
import { createAudienceSource } from './audience-reader.ts';
import { toAudienceSpec } from './audience-source.ts';
import { createDemuxerMetrics } from './demuxer-metrics.ts';
import { createFanoutChunkHandler } from './fanout-chunk.ts';
import { WaveMonitor } from './wave-monitor.ts';

const logger = createLogger({ service: 'fanout-chunk-test', level: 'silent' });
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;
beforeAll(async () => {
  t = await createTestDatabase('fanoutchunk');
  vhost = await createTestVhost('fanoutchunk');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'fanout-chunk-test' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
  await t.db.apps.upsert({ id: 'bcast', apnsTopic: 'com.herald.bcast' });
  for (let u = 0; u < 3; u++) {
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'bcast', platform: 'apns', token: `b${u}`.padEnd(64, '0'), userId: `u${u}`, eventAt: '2025-01-01T00:00:00Z' });
  }
});
afterAll(async () => {
  await broker.close();
  await vhost.delete();
  await t.drop();
});

const task = (jobId: string, chunk: number, redelivered: boolean): InboundMessage => ({
  body: Buffer.from(JSON.stringify({ version: 1, jobId, chunk })),
  headers: {},
  routingKey: Queues.fanout,
  redelivered,
  attempt: 1,
  queue: Queues.fanout,
});
const waitingTasks = async () => (await broker.queueCounts([Queues.fanout])).get(Queues.fanout)?.ready ?? 0;

describe('fan-out chunk tasks', () => {
  it("a redelivered task of a chunk another copy finished publishes the next chunk's task, which that copy did not", async () => {
    const fanouts = createFanoutRepository(t.db.kysely);
    const audiences = createAudienceSource(t.db);
    const job: PushJobInput = { id: randomUUID(), app: 'bcast', category: 'news', content: { title: 'Hi' }, audience: { broadcast: true } };
    await fanouts.start({ jobId: job.id, app: 'bcast', audience: { broadcast: true }, job, acceptedAt: new Date(), size: 3, exact: true });
    const fanout = await fanouts.get(job.id);
    // Copy 1 of chunk 0's task: its demuxer read the chunk, created chunk 1, and died before publishing chunk 1's task.
    const read = await audiences.read({ app: 'bcast', audience: toAudienceSpec({ broadcast: true }), category: 'news', after: null, limit: 1, now: new Date(), ...(fanout && { startedAt: fanout.startedAt }) });
    expect(read.next).not.toBeNull();
    expect(await fanouts.linkNext(job.id, 0, read.next)).toBe(true);
    const expand = createFanoutChunkHandler({
      fanouts,
      audiences,
      publisher: broker.publisher,
      scheduling: { store: t.db.scheduled, wave: new WaveMonitor(2000, 60), horizonDays: 366, slackMs: 1000 },
      metrics: createDemuxerMetrics(new Registry()),
      logger,
      chunkSize: 1,
    });
    // Copy 2, a first delivery, did not create chunk 1, so it leaves its task to the creator, and finishes chunk 0.
    expect(await expand([task(job.id, 0, false)])).toEqual([{ kind: 'ack' }]);
    expect((await fanouts.chunk(job.id, 0))?.state).toBe('done');
    expect(await waitingTasks()).toBe(0);
    // Copy 1 comes back: chunk 0 is done, but chunk 1's task is published, or the fan-out would stop here for good.
    expect(await expand([task(job.id, 0, true)])).toEqual([{ kind: 'ack' }]);
    await waitFor("chunk 1's task", async () => ((await waitingTasks()) === 1 ? true : undefined), { timeoutMs: 5_000 });
    expect((await fanouts.chunk(job.id, 1))?.state).not.toBe('done');
  });
});
