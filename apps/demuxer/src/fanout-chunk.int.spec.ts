import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queues, type PushJobInput } from '@herald/contracts';
import { applyFollowEvents, createFanoutRepository, plannedOf, toJobStatus, type FanoutRepository } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, type Broker, type InboundMessage, type Publisher } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, createTestVhost, peekMessages, waitFor, type TestDatabase, type TestVhost } from '@herald/testing';
import { createAudienceSource } from './audience-reader.ts';
import { toAudienceSpec } from './audience-source.ts';
import { reachableDevices } from './fan-out.ts';
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
  it("a chunk linked by a copy that died before publishing the next chunk's task: later copies publish it until a copy begins that chunk, a first delivery (a deferred copy) too", async () => {
    const fanouts = createFanoutRepository(t.db.kysely);
    const audiences = createAudienceSource(t.db);
    const job: PushJobInput = { id: randomUUID(), app: 'bcast', category: 'news', content: { title: 'Hi' }, audience: { broadcast: true } };
    await fanouts.start({ jobId: job.id, app: 'bcast', audience: { broadcast: true }, job, acceptedAt: new Date(), size: 3, exact: true });
    const fanout = await fanouts.get(job.id);
    // Copy 1 of chunk 0's task: its demuxer read the chunk, created chunk 1, and died before publishing chunk 1's task.
    const read = await audiences.read({ app: 'bcast', audience: toAudienceSpec({ broadcast: true }), category: 'news', after: null, limit: 1, now: new Date(), ...(fanout && { startedAt: fanout.startedAt }) });
    expect(read.next).not.toBeNull();
    expect((await fanouts.linkNext(job.id, 0, read.next)).created).toBe(true);
    const expand = createFanoutChunkHandler({
      fanouts,
      apps: t.db.apps,
      audiences,
      publisher: broker.publisher,
      scheduling: { store: t.db.scheduled, wave: new WaveMonitor(2000, 60), horizonDays: 366, slackMs: 1000 },
      metrics: createDemuxerMetrics(new Registry()),
      logger,
      chunkSize: 1,
    });
    // Copy 2 did not create chunk 1 and is not flagged redelivered (the consumer deferred a copy
    // after a database error: a new publish, attempt unchanged). It cannot know whether the
    // creator lives, so it publishes chunk 1's task too, and finishes chunk 0.
    expect(await expand([task(job.id, 0, false)])).toEqual([{ kind: 'ack' }]);
    expect((await fanouts.chunk(job.id, 0))?.state).toBe('done');
    await waitFor("chunk 1's task", async () => ((await waitingTasks()) === 1 ? true : undefined), { timeoutMs: 5_000 });
    // Another copy (again unflagged) finds chunk 0 done and chunk 1 not begun: its task goes out once more (a duplicate is harmless).
    expect(await expand([task(job.id, 0, false)])).toEqual([{ kind: 'ack' }]);
    await waitFor("chunk 1's task again", async () => ((await waitingTasks()) === 2 ? true : undefined), { timeoutMs: 5_000 });
    // Once a copy of chunk 1's task has begun it (linked chunk 2), a later copy of chunk 0's publishes
    // nothing: the copy that linked it carries the chain (each duplicate passed on would breed more).
    const chunk1 = await fanouts.chunk(job.id, 1);
    const read1 = await audiences.read({ app: 'bcast', audience: toAudienceSpec({ broadcast: true }), category: 'news', after: chunk1?.afterCursor ?? null, limit: 1, now: new Date(), ...(fanout && { startedAt: fanout.startedAt }) });
    expect((await fanouts.linkNext(job.id, 1, read1.next)).created).toBe(true); // a copy of chunk 1's task, at work
    expect(await expand([task(job.id, 0, true)])).toEqual([{ kind: 'ack' }]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await waitingTasks()).toBe(2);
  });

  it('a chunk marked done by a demuxer that died before moving the fan-out on: the next copy of its task moves it to sending', async () => {
    const { fanouts, job } = await plannedThenDied('diedafterdone');
    // The last (only) chunk marked done, and the demuxer gone before the fan-out's state moved.
    // (fanout_chunks is written in SQL by the repository, not typed for the query builder.)
    await t.db.kysely.updateTable('fanout_chunks' as never).set({ state: 'done' } as never).where('job_id' as never, '=', job.id as never).execute();
    expect(await fanouts.state(job.id)).toBe('expanding');
    expect(await handler(fanouts, 10)([task(job.id, 0, false)])).toEqual([{ kind: 'ack' }]);
    expect(await fanouts.state(job.id)).toBe('sending');
  });

  // Disabling an app is how an operator stops it: a broadcast under way read every remaining chunk, and the pushers parked its pushes one by one.
  it("a chunk of a job whose app was disabled meanwhile is parked unread, and its task replayed once the app is enabled goes on from there", async () => {
    const app = 'stopped';
    await t.db.apps.upsert({ id: app, apnsTopic: `com.herald.${app}` });
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app, platform: 'apns', token: 's'.padEnd(64, '1'), userId: 'u0', eventAt: '2025-01-01T00:00:00Z' });
    const fanouts = createFanoutRepository(t.db.kysely);
    const job: PushJobInput = { id: randomUUID(), app, category: 'news', content: { title: 'Hi' }, audience: { broadcast: true } };
    await fanouts.start({ jobId: job.id, app, audience: { broadcast: true }, job, acceptedAt: new Date(), size: 1, exact: true });
    await t.db.apps.upsert({ id: app, enabled: false });
    const [parked] = await handler(fanouts, 10)([task(job.id, 0, false)]);
    expect(parked).toEqual({ kind: 'park', code: 'app-disabled', reason: expect.stringMatching(/^app "stopped" is disabled: the fan-out stopped at chunk 0; enable the app and replay/) as unknown });
    expect(await fanouts.chunk(job.id, 0)).toMatchObject({ state: 'pending', linked: false });
    await t.db.apps.upsert({ id: app, enabled: true });
    expect(await handler(fanouts, 10)([task(job.id, 0, false)])).toEqual([{ kind: 'ack' }]);
    expect(await fanouts.chunk(job.id, 0)).toMatchObject({ state: 'done' });
  });

  /** The chunk handler over the real database and broker (`fanouts` may wrap the real repository). */
  const handler = (fanouts: FanoutRepository, chunkSize: number, extra: { publisher?: Publisher; publishSlice?: number } = {}) =>
    createFanoutChunkHandler({
      fanouts,
      apps: t.db.apps,
      audiences: createAudienceSource(t.db),
      publisher: broker.publisher,
      ...extra,
      scheduling: { store: t.db.scheduled, wave: new WaveMonitor(2000, 60), horizonDays: 366, slackMs: 1000 },
      metrics: createDemuxerMetrics(new Registry()),
      logger,
      chunkSize,
    });

  /** A broadcast of its own app (three devices), and its first chunk read, linked and planned by a demuxer that then died. */
  async function plannedThenDied(app: string) {
    await t.db.apps.upsert({ id: app, apnsTopic: `com.herald.${app}` });
    const tokens = [0, 1, 2].map((u) => `${u}`.padEnd(64, 'a'));
    for (const [u, token] of tokens.entries()) {
      await t.db.devices.applyRegistration({ version: 1, kind: 'register', app, platform: 'apns', token, userId: `u${u}`, eventAt: '2025-01-01T00:00:00Z' });
    }
    const fanouts = createFanoutRepository(t.db.kysely);
    const job: PushJobInput = { id: randomUUID(), app, category: 'news', content: { title: 'Hi' }, audience: { broadcast: true } };
    await fanouts.start({ jobId: job.id, app, audience: { broadcast: true }, job, acceptedAt: new Date(), size: 3, exact: true });
    const read = await createAudienceSource(t.db).read({ app, audience: toAudienceSpec({ broadcast: true }), category: 'news', after: null, limit: 10, now: new Date() });
    expect(read.devices).toHaveLength(3);
    expect((await fanouts.linkNext(job.id, 0, read.next)).next).toBeNull();
    const planned = plannedOf(reachableDevices({ ...job, priority: 'high' } as never, read.devices));
    expect(await fanouts.recordChunk(job.id, 0, { devices: 3, targeted: 3, noDevice: 0, emitted: 3, outcomes: [], planned })).toBe('recorded');
    return { fanouts, job, tokens, deviceIds: read.devices.map((d) => d.deviceId) };
  }

  const status = async (jobId: string) => {
    const record = await t.db.jobs.status(jobId);
    if (record === undefined) throw new Error('no status');
    return toJobStatus(record);
  };

  it('a chunk publishes its pushes in slices of at most publishSlice, each confirmed before the next (a member with thousands of devices)', async () => {
    const app = 'sliced';
    await t.db.apps.upsert({ id: app, apnsTopic: `com.herald.${app}` });
    for (let d = 0; d < 7; d++) {
      await t.db.devices.applyRegistration({ version: 1, kind: 'register', app, platform: 'apns', token: `${d}`.padEnd(64, 'c'), userId: 'shared', eventAt: '2025-01-01T00:00:00Z' });
    }
    const fanouts = createFanoutRepository(t.db.kysely);
    const job: PushJobInput = { id: randomUUID(), app, category: 'news', content: { title: 'Hi' }, audience: { broadcast: true } };
    await fanouts.start({ jobId: job.id, app, audience: { broadcast: true }, job, acceptedAt: new Date(), size: 7, exact: true });
    const sizes: number[] = [];
    const publisher: Publisher = { ...broker.publisher, publishMany: (messages, options) => (sizes.push(messages.length), broker.publisher.publishMany(messages, options)) };
    expect(await handler(fanouts, 10, { publisher, publishSlice: 3 })([task(job.id, 0, false)])).toEqual([{ kind: 'ack' }]);
    expect(sizes).toEqual([3, 3, 1]);
    const sent = (await peekMessages(vhost.name, Queues.apnsSend, 200)).map((m) => JSON.parse(m.payload) as { jobId: string }).filter((p) => p.jobId === job.id);
    expect(sent).toHaveLength(7);
  });

  it('a chunk redone after its demuxer died once it was planned sends exactly the devices planned, however the audience changed', async () => {
    const { fanouts, job, tokens, deviceIds } = await plannedThenDied('redo');
    // Meanwhile one device is unregistered and another registers: a second read would plan 3 others.
    await t.db.devices.applyRegistration({ version: 1, kind: 'unregister', app: 'redo', platform: 'apns', token: tokens[0] as string, eventAt: new Date().toISOString() });
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'redo', platform: 'apns', token: 'f'.repeat(64), userId: 'late', eventAt: '2025-01-01T00:00:00Z' });
    expect(await handler(fanouts, 10)([task(job.id, 0, true)])).toEqual([{ kind: 'ack' }]);
    const sent = (await peekMessages(vhost.name, Queues.apnsSend, 100)).map((m) => JSON.parse(m.payload) as { jobId: string; deviceId: string }).filter((p) => p.jobId === job.id);
    expect(sent.map((p) => p.deviceId).sort()).toEqual([...deviceIds].sort());
    expect(await status(job.id)).toMatchObject({ targeted: 3, inFlight: 3 });
    expect((await fanouts.chunk(job.id, 0))?.state).toBe('done');
  });

  it("a cancelled job's chunk, planned but never sent, records its pushes as cancelled: the job's counts add up", async () => {
    const { fanouts, job } = await plannedThenDied('cancelplanned');
    expect((await fanouts.cancel(job.id)).fanout).toBe(true);
    expect(await handler(fanouts, 10)([task(job.id, 0, true)])).toEqual([{ kind: 'ack' }]);
    expect(await status(job.id)).toMatchObject({ state: 'cancelled', targeted: 3, inFlight: 0, skipped: { cancelled: 3 } });
  });

  it("a cancel that lands while a planned chunk is being redone records its pushes as cancelled too", async () => {
    const { fanouts, job } = await plannedThenDied('cancelredo');
    const cancelling: FanoutRepository = { ...fanouts, recordOutcomes: async (id, outcomes) => (await fanouts.cancel(id), fanouts.recordOutcomes(id, outcomes)) };
    expect(await handler(cancelling, 10)([task(job.id, 0, true)])).toEqual([{ kind: 'ack' }]);
    expect(await status(job.id)).toMatchObject({ state: 'cancelled', targeted: 3, inFlight: 0, skipped: { cancelled: 3 } });
  });

  it('a copy that finds the chunk linked to another end by a copy racing it defers, and then follows that copy', async () => {
    const real = createFanoutRepository(t.db.kysely);
    const job: PushJobInput = { id: randomUUID(), app: 'bcast', category: 'news', content: { title: 'Hi' }, audience: { broadcast: true } };
    await real.start({ jobId: job.id, app: 'bcast', audience: { broadcast: true }, job, acceptedAt: new Date(), size: 3, exact: true });
    // The other copy read two devices and linked first; this one reads one.
    const other = await createAudienceSource(t.db).read({ app: 'bcast', audience: toAudienceSpec({ broadcast: true }), category: 'news', after: null, limit: 2, now: new Date() });
    const racing: FanoutRepository = { ...real, linkNext: async (id, n, next) => (await real.linkNext(id, n, other.next), real.linkNext(id, n, next)) };
    const [outcome] = await handler(racing, 1)([task(job.id, 0, false)]);
    expect(outcome).toMatchObject({ kind: 'defer', code: 'fanout-race' });
    expect((await real.chunk(job.id, 0))?.state).toBe('pending');
    // Back again, it reads up to where the other copy ended: two devices, chunk 1 after them.
    expect(await handler(real, 1)([task(job.id, 0, true)])).toEqual([{ kind: 'ack' }]);
    expect(await status(job.id)).toMatchObject({ targeted: 2 });
    expect((await real.chunk(job.id, 1))?.afterCursor).toBe(other.next);
  });

  /** An app of its own whose two followers of "star" have a device each (fa the phone), and a fan-out to them started. */
  async function followersFanout(app: string, phone: string, other: string) {
    await t.db.apps.upsert({ id: app, apnsTopic: `com.herald.${app}` });
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app, platform: 'apns', token: phone, userId: 'fa', eventAt: '2025-01-01T00:00:00Z' });
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app, platform: 'apns', token: other, userId: 'fb', eventAt: '2025-01-01T00:00:00Z' });
    await applyFollowEvents(t.db.kysely, ['fa', 'fb'].map((follower) => ({ app, followee: 'star', follower, following: true, eventAt: '2025-01-01T00:00:00Z' })));
    const fanouts = createFanoutRepository(t.db.kysely);
    const job: PushJobInput = { id: randomUUID(), app, category: 'news', content: { title: 'Hi' }, audience: { followersOf: 'star' } };
    await fanouts.start({ jobId: job.id, app, audience: { followersOf: 'star' }, job, acceptedAt: new Date(), size: 2, exact: false });
    return { fanouts, job };
  }

  it('a device that moves from a member already read to a member read later is planned once', async () => {
    const app = 'moving';
    const [phone, other] = ['e'.repeat(64), 'd'.repeat(64)];
    const { fanouts, job } = await followersFanout(app, phone, other);
    const expand = handler(fanouts, 1);
    expect(await expand([task(job.id, 0, false)])).toEqual([{ kind: 'ack' }]); // fa and the phone
    // An app launch registers it again for the same user: that is no change of hands (nothing to look for).
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app, platform: 'apns', token: phone, userId: 'fa', eventAt: new Date().toISOString() });
    const handsOf = async () => (await t.db.kysely.selectFrom('devices').select('user_changed_at').where('token', '=', phone).executeTakeFirstOrThrow()).user_changed_at;
    expect(await handsOf()).toBeNull();
    // The phone logs in as fb, whom the next chunk reads.
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app, platform: 'apns', token: phone, userId: 'fb', eventAt: new Date(Date.now() + 1).toISOString() });
    expect(await handsOf()).not.toBeNull();
    expect(await expand([task(job.id, 1, false)])).toEqual([{ kind: 'ack' }]);
    expect((await fanouts.chunk(job.id, 1))?.planned?.deviceIds).toHaveLength(1);
    expect(await status(job.id)).toMatchObject({ targeted: 2, inFlight: 2 });
  });

  it('a device that moves while two chunks are read side by side is counted once: the chunk recording second plans again without it', async () => {
    const app = 'racing';
    const phone = '9'.repeat(64);
    const { fanouts: real, job } = await followersFanout(app, phone, '8'.repeat(64));
    // Chunk 0 has read fa and the phone; before it records them, the phone logs in as fb, and chunk 1 reads fb (with the phone) and records.
    const interleaved: FanoutRepository = {
      ...real,
      recordChunk: async (id, n, counts) => {
        if (n === 0 && counts.planned.deviceIds.length > 0) {
          await t.db.devices.applyRegistration({ version: 1, kind: 'register', app, platform: 'apns', token: phone, userId: 'fb', eventAt: new Date().toISOString() });
          expect(await handler(real, 1)([task(job.id, 1, false)])).toEqual([{ kind: 'ack' }]);
        }
        return real.recordChunk(id, n, counts);
      },
    };
    expect(await handler(interleaved, 1)([task(job.id, 0, false)])).toEqual([{ kind: 'ack' }]);
    expect((await real.chunk(job.id, 1))?.planned?.deviceIds).toHaveLength(2);
    expect((await real.chunk(job.id, 0))?.planned?.deviceIds).toEqual([]);
    // The walk ends with a chunk that finds no one after fb.
    expect(await handler(real, 1)([task(job.id, 2, false)])).toEqual([{ kind: 'ack' }]);
    const sent = (await peekMessages(vhost.name, Queues.apnsSend, 500)).map((m) => JSON.parse(m.payload) as { jobId: string; pushId: string }).filter((p) => p.jobId === job.id);
    expect(new Set(sent.map((p) => p.pushId)).size).toBe(2);
    expect(await status(job.id)).toMatchObject({ state: 'sending', targeted: 2, inFlight: 2 });
    await t.db.jobs.recordOutcomes([...new Set(sent.map((p) => p.pushId))].map((pushId) => ({ pushId, jobId: job.id, outcome: 'delivered' as const })));
    expect(await status(job.id)).toMatchObject({ state: 'done', targeted: 2, delivered: 2, inFlight: 0 });
  });
});
