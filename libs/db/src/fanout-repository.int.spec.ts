import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { derivePushId, type DevicePush } from '@herald/contracts';
import { createSpecDatabase, specDevicePush, type SpecDatabase } from './spec-database.ts';
import { createFanoutRepository, type FanoutRepository } from './fanout-repository.ts';
import { createCancelledJobsReader } from './fanout-cancellations.ts';
import { cancelJobFully } from './cancel-job.ts';
import { toJobStatus } from './job-status-view.ts';
import { derivedPushId } from './job-repository.ts';
import { startReplayedOutcomes } from './replayed-outcomes.ts';
import { pruneJobs, settleSentFanouts } from './job-prune.ts';
import { sql } from 'kysely';

let t: SpecDatabase;
let fanouts: FanoutRepository;
beforeAll(async () => {
  t = await createSpecDatabase('fanouts');
  await t.db.apps.upsert({ id: 'demo' });
  fanouts = createFanoutRepository(t.db.kysely);
});
afterAll(() => t.drop());

/** No devices planned (these specs count by hand). */
const NONE = { deviceIds: [], userIds: [], toDevice: [] };
/** These devices planned, each a push to its own user. */
const plannedFor = (deviceIds: string[]) => ({ deviceIds, userIds: deviceIds.map((d) => `u${d}`), toDevice: deviceIds.map(() => false) });
const delivered = (jobId: string, deviceIds: string[]) => t.db.jobs.recordOutcomes(deviceIds.map((d) => ({ pushId: derivePushId(jobId, d), jobId, outcome: 'delivered' as const })));
const storedPush = (jobId: string, deviceId: string): DevicePush => specDevicePush(jobId, deviceId, { userId: `u${deviceId}` });
/** A chunk that read `deviceIds` and planned a push to each for `user` (`toDevice`: to the device itself), told to look for devices moved since `since`. */
const movedChunk = (deviceIds: string[], user: string, since: Date, toDevice = false) => ({
  devices: deviceIds.length,
  targeted: deviceIds.length,
  noDevice: 0,
  emitted: deviceIds.length,
  outcomes: [],
  planned: { deviceIds, userIds: deviceIds.map(() => user), toDevice: deviceIds.map(() => toDevice) },
  moved: { deviceIds, since },
});
/** Registers the APNs token `token` of app demo for `userId`, naming `previousToken` if given. */
const registerDemo = (token: string, userId: string, eventAt: string, previousToken?: string) =>
  t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'demo', platform: 'apns', token, userId, eventAt, ...(previousToken !== undefined && { previousToken }) });
const deviceIdOf = async (token: string) => (await t.db.kysely.selectFrom('devices').select(sql<string>`id::text`.as('id')).where('token', '=', token).executeTakeFirstOrThrow()).id;

const begin = (jobId: string, size = 5) =>
  fanouts.start({ jobId, app: 'demo', audience: { topic: 'news' }, job: { id: jobId }, acceptedAt: new Date(), size, exact: true });

const status = async (jobId: string) => {
  const record = await t.db.jobs.status(jobId);
  if (record === undefined) throw new Error('no status');
  return toJobStatus(record);
};

describe('fan-out checkpoints', () => {
  it('starts once: a redelivered job finds the chunks not yet done', async () => {
    const job = randomUUID();
    expect(await begin(job)).toEqual({ created: true, state: 'expanding', open: [0] });
    expect(await fanouts.linkNext(job, 0, 'c1')).toEqual({ created: true, next: 'c1' });
    await fanouts.finishChunk(job, 0);
    expect(await begin(job)).toEqual({ created: false, state: 'expanding', open: [1] });
    expect(await fanouts.chunk(job, 1)).toEqual({ chunkNo: 1, afterCursor: 'c1', nextCursor: null, linked: false, state: 'pending', planned: null });
    // A linked chunk remembers where it ended: redone, it reads up to there again.
    expect(await fanouts.chunk(job, 0)).toMatchObject({ afterCursor: null, nextCursor: 'c1' });
  });

  it('makes no fan-out for a job whose id another job holds (another app, other content), and leaves that job as it was', async () => {
    const job = randomUUID();
    const start = (app: string, hash: string) =>
      fanouts.start({ jobId: job, app, audience: { topic: 'news' }, job: { id: job }, acceptedAt: new Date(), size: 1, exact: true, contentHash: Buffer.alloc(32, hash) });
    expect(await start('demo', 'one')).toEqual({ created: true, state: 'expanding', open: [0] });
    expect(await start('other', 'one')).toEqual({ taken: { code: 'job-id-conflict', reason: `job id "${job}" is already used by another app` } });
    expect(await start('demo', 'two')).toMatchObject({ taken: { code: 'job-id-reused' } });
    expect(await start('demo', 'one')).toEqual({ created: false, state: 'expanding', open: [0] });
    expect((await sql<{ app: string }>`select app from fanouts where job_id = ${job}`.execute(t.db.kysely)).rows).toEqual([{ app: 'demo' }]);
  });

  it('another app’s job does not take over a fanned-out job’s row whose chunk was parked unknown-app, nor a parked job’s row of another code', async () => {
    const [fannedOut, parked] = [randomUUID(), randomUUID()];
    const digest = (text: string) => Buffer.alloc(32, text);
    expect(await fanouts.start({ jobId: fannedOut, app: 'demo', audience: { topic: 'news' }, job: { id: fannedOut }, acceptedAt: new Date(), size: 1, exact: true, contentHash: digest('a') })).toMatchObject({ created: true });
    // A reason quoting a NUL is stored with U+FFFD in its place (refused, it blocked every later park record).
    await fanouts.recordPark(fannedOut, 0, 'unknown-app', 'chunk 0: unknown app "demo\u0000"');
    expect(await t.db.jobs.get(fannedOut)).toMatchObject({ demuxOutcome: 'parked: unknown-app', demuxReason: 'chunk 0: unknown app "demo\ufffd"' });
    const other = { jobId: fannedOut, app: 'other', audience: { topic: 'news' }, job: { id: fannedOut }, acceptedAt: new Date(), size: 1, exact: true, contentHash: digest('b') };
    expect(await fanouts.start(other)).toMatchObject({ taken: { code: 'job-id-conflict' } });
    expect((await t.db.jobs.recordDemux([{ id: fannedOut, app: 'other', targeted: 1, outcome: 'fanned-out', contentHash: digest('b') }])).taken.get(fannedOut)?.code).toBe('job-id-conflict');
    expect(await t.db.jobs.get(fannedOut)).toMatchObject({ app: 'demo' });

    await t.db.jobs.recordJobParks([{ id: parked, app: 'demo', code: 'provider-rules', reason: 'content: …', contentHash: digest('c') }]);
    expect((await t.db.jobs.recordDemux([{ id: parked, app: 'other', targeted: 1, outcome: 'fanned-out', contentHash: digest('d') }])).taken.get(parked)?.code).toBe('job-id-conflict');
    expect(await t.db.jobs.get(parked)).toMatchObject({ app: 'demo', demuxOutcome: 'parked: provider-rules' });
  });

  // usage.md promises them for every job; an audience job's status had none.
  it("keeps the job's notices in its status, as a user job's (an expiry capped, a local time expiring within a day)", async () => {
    const job = randomUUID();
    const notices = ['expiresAt: FCM keeps a message for at most 28 days'];
    await fanouts.start({ jobId: job, app: 'demo', audience: { topic: 'news' }, job: { id: job }, acceptedAt: new Date(), size: 1, exact: true, notices });
    expect((await status(job)).notices).toEqual(notices);
  });

  // Before, its row was stamped when the demuxer started the fan-out: late by the job's wait in push.jobs, and retained from then.
  it("records when the job was accepted, never ahead of now", async () => {
    const [waited, ahead] = [randomUUID(), randomUUID()];
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    await fanouts.start({ jobId: waited, app: 'demo', audience: { topic: 'news' }, job: { id: waited }, acceptedAt: twoHoursAgo, size: 1, exact: true });
    await fanouts.start({ jobId: ahead, app: 'demo', audience: { topic: 'news' }, job: { id: ahead }, acceptedAt: new Date(Date.now() + 3_600_000), size: 1, exact: true });
    const acceptedAt = async (id: string) => (await t.db.kysely.selectFrom('jobs').select('accepted_at').where('id', '=', id).executeTakeFirstOrThrow()).accepted_at.getTime();
    expect(await acceptedAt(waited)).toBe(twoHoursAgo.getTime());
    expect(await acceptedAt(ahead)).toBeLessThanOrEqual(Date.now());
  });

  it('a redelivered task cannot fork the chain: the first link wins, and only it creates the next chunk', async () => {
    const job = randomUUID();
    await begin(job);
    expect(await fanouts.linkNext(job, 0, 'c1')).toEqual({ created: true, next: 'c1' });
    // A second copy that read to elsewhere is told where the chunk ends; its own end is not recorded.
    expect(await fanouts.linkNext(job, 0, 'c1-again')).toEqual({ created: false, next: 'c1' });
    expect(await fanouts.chunk(job, 0)).toMatchObject({ nextCursor: 'c1', linked: true });
    expect((await fanouts.chunk(job, 1))?.afterCursor).toBe('c1');
    expect(await fanouts.linkNext(job, 1, null)).toEqual({ created: false, next: null });
    expect(await fanouts.linkNext(job, 1, 'c2')).toEqual({ created: false, next: null });
    expect(await fanouts.chunk(job, 1)).toMatchObject({ nextCursor: null, linked: true });
    expect(await fanouts.chunk(job, 2)).toBeUndefined();
  });

  it('counts add up per chunk, re-recording a chunk does not count it twice, and the last chunk moves it to sending', async () => {
    const job = randomUUID();
    await begin(job, 5);
    const skip = (d: string) => ({ pushId: derivePushId(job, d), jobId: job, outcome: 'opted-out' as const, platform: 'apns', deviceId: d });
    await fanouts.linkNext(job, 0, 'c1');
    expect(await fanouts.recordChunk(job, 0, { devices: 3, targeted: 4, noDevice: 1, emitted: 2, outcomes: [skip('1')], planned: NONE })).toBe('recorded');
    // The same chunk again (a demuxer died after recording it, or a copy racing): planned already, nothing written.
    expect(await fanouts.recordChunk(job, 0, { devices: 9, targeted: 9, noDevice: 0, emitted: 9, outcomes: [skip('9')], planned: NONE })).toBe('planned-before');
    await fanouts.finishChunk(job, 0);
    let s = await status(job);
    expect(s).toMatchObject({ targeted: 4, state: 'expanding', skipped: { optedOut: 1, noDevice: 1 }, inFlight: 2 });
    expect(s.audience).toMatchObject({ size: 5, expanded: 3, chunks: 2, chunksDone: 1 });
    await fanouts.linkNext(job, 1, null);
    expect(await fanouts.recordChunk(job, 1, { devices: 2, targeted: 2, noDevice: 0, emitted: 2, outcomes: [], planned: NONE })).toBe('recorded');
    await fanouts.finishChunk(job, 1);
    await t.db.jobs.recordOutcomes(['2', '3', '4', '5'].map((d) => ({ pushId: derivePushId(job, d), jobId: job, outcome: 'delivered' as const })));
    s = await status(job);
    expect(s).toMatchObject({ targeted: 6, delivered: 4, inFlight: 0, state: 'done' });
    expect(s.audience).toMatchObject({ expanded: 5, chunks: 2, chunksDone: 2 });
    expect(await fanouts.state(job)).toBe('sending');
    // Settled: the job prune marks it done (no dashboard looked at it) and prunes it in time; one
    // with a push still without an outcome stays sending, and kept.
    const unsettled = randomUUID();
    await begin(unsettled, 1);
    await fanouts.linkNext(unsettled, 0, null);
    expect(await fanouts.recordChunk(unsettled, 0, { devices: 1, targeted: 1, noDevice: 0, emitted: 1, outcomes: [], planned: NONE })).toBe('recorded');
    await fanouts.finishChunk(unsettled, 0);
    expect(await fanouts.state(unsettled)).toBe('sending');
    // A fan-out row another transaction holds (a cancel, the dashboard) is skipped, not waited for.
    let release!: () => void;
    const held = t.db.kysely.transaction().execute(async (trx) => {
      await sql`select 1 from fanouts where job_id = ${job} for update`.execute(trx);
      await new Promise<void>((r) => (release = r));
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(await settleSentFanouts(t.db.kysely)).toBe(0);
    release();
    await held;
    await pruneJobs(t.db.kysely, new Date(Date.now() + 60_000));
    expect(await fanouts.state(job)).toBeUndefined();
    expect(await t.db.jobs.get(job)).toBeUndefined();
    expect(await fanouts.state(unsettled)).toBe('sending');
    expect(await t.db.jobs.get(unsettled)).toBeDefined();
  });

  it('a parked chunk task shows the job parked until that chunk is done, not expanding forever; pruned in time', async () => {
    const job = randomUUID();
    await begin(job, 5);
    expect(await fanouts.linkNext(job, 0, 'c1')).toEqual({ created: true, next: 'c1' });
    await fanouts.finishChunk(job, 0);
    await fanouts.recordPark(job, 1, 'delivery-limit', 'chunk 1: delivered 5 times without an answer');
    expect(await status(job)).toMatchObject({ state: 'done', jobParked: { code: 'delivery-limit', reason: 'chunk 1: delivered 5 times without an answer' } });
    // Kept while it expands, pruned once parked and old enough (an expanding fan-out never was).
    const running = randomUUID();
    await begin(running, 5);
    await pruneJobs(t.db.kysely, new Date(Date.now() + 60_000));
    expect(await t.db.jobs.get(running)).toBeDefined();
    expect(await t.db.jobs.get(job)).toBeUndefined();
  });

  it('a later chunk finishing does not lift the park of an earlier one; that chunk done (its task replayed) does', async () => {
    const job = randomUUID();
    await begin(job, 5);
    await fanouts.linkNext(job, 0, 'c1');
    await fanouts.linkNext(job, 1, null);
    // Chunk 0 linked chunk 1 before it failed for good: chunk 1 goes on and finishes.
    await fanouts.recordPark(job, 0, 'retries-exhausted', 'chunk 0: boom');
    await fanouts.finishChunk(job, 1);
    expect(await status(job)).toMatchObject({ state: 'done', jobParked: { code: 'retries-exhausted', reason: 'chunk 0: boom' } });
    await fanouts.finishChunk(job, 0);
    expect(await status(job)).toMatchObject({ jobParked: null, demuxOutcome: 'fanned-out' });
    // A chunk already done, or a fan-out no longer expanding, is not marked by a stray park.
    await fanouts.recordPark(job, 1, 'delivery-limit', 'late');
    expect((await status(job)).jobParked).toBeNull();
  });

  it('a parked fan-out whose earlier chunks still have pushes on their way reads sending, not done', async () => {
    const job = randomUUID();
    await begin(job, 5);
    await fanouts.linkNext(job, 0, 'c1');
    expect(await fanouts.recordChunk(job, 0, { devices: 2, targeted: 2, noDevice: 0, emitted: 2, outcomes: [], planned: NONE })).toBe('recorded');
    await fanouts.finishChunk(job, 0);
    await fanouts.recordPark(job, 1, 'delivery-limit', 'chunk 1: x');
    expect(await status(job)).toMatchObject({ state: 'sending', inFlight: 2, jobParked: { code: 'delivery-limit' } });
    // Chunk 0's pushes delivered, and chunk 1, parked before it was read, counted nothing: done.
    await delivered(job, ['1', '2']);
    expect(await status(job)).toMatchObject({ state: 'done', inFlight: 0 });
    // A chunk planned and then parked: its pushes have no outcome coming until its task is replayed: done.
    const other = randomUUID();
    await begin(other, 5);
    await fanouts.linkNext(other, 0, null);
    expect(await fanouts.recordChunk(other, 0, { devices: 3, targeted: 3, noDevice: 0, emitted: 3, outcomes: [], planned: plannedFor(['1', '2', '3']) })).toBe('recorded');
    await fanouts.recordPark(other, 0, 'retries-exhausted', 'chunk 0: publish failed');
    expect(await status(other)).toMatchObject({ state: 'done', inFlight: 3, jobParked: { code: 'retries-exhausted' } });
  });

  // A chunk links the next and publishes its task before it sends: parked after that, the chain goes on (it read done).
  it('a chunk parked after it linked the next: the job reads expanding until every other chunk is done, then sending while a push is on its way', async () => {
    const job = randomUUID();
    await begin(job, 5);
    await fanouts.linkNext(job, 0, 'c1');
    expect(await fanouts.recordChunk(job, 0, { devices: 2, targeted: 2, noDevice: 0, emitted: 2, outcomes: [], planned: plannedFor(['11', '12']) })).toBe('recorded');
    await fanouts.recordPark(job, 0, 'retries-exhausted', 'chunk 0: publish failed');
    expect(await status(job)).toMatchObject({ state: 'expanding', targeted: 2, inFlight: 2, jobParked: { code: 'retries-exhausted' } });
    await fanouts.linkNext(job, 1, null);
    expect(await fanouts.recordChunk(job, 1, { devices: 1, targeted: 1, noDevice: 0, emitted: 1, outcomes: [], planned: plannedFor(['13']) })).toBe('recorded');
    expect((await status(job)).state).toBe('expanding');
    await fanouts.finishChunk(job, 1);
    expect(await status(job)).toMatchObject({ state: 'sending', targeted: 3, inFlight: 3 });
    await delivered(job, ['13']);
    expect(await status(job)).toMatchObject({ state: 'done', targeted: 3, delivered: 1, inFlight: 2, jobParked: { code: 'retries-exhausted' } });
  });

  it("a parked chunk's pushes that have an outcome, or are stored for later, are not taken for ones that will never come", async () => {
    const job = randomUUID();
    await begin(job, 5);
    await fanouts.linkNext(job, 0, 'c1');
    expect(await fanouts.recordChunk(job, 0, { devices: 2, targeted: 2, noDevice: 0, emitted: 2, outcomes: [], planned: plannedFor(['21', '22']) })).toBe('recorded');
    await fanouts.finishChunk(job, 0);
    await fanouts.linkNext(job, 1, null);
    expect(await fanouts.recordChunk(job, 1, { devices: 3, targeted: 3, noDevice: 0, emitted: 3, outcomes: [], planned: plannedFor(['23', '24', '25']) })).toBe('recorded');
    // Chunk 1 published two of its pushes before its task was parked; they were delivered.
    await delivered(job, ['23', '24']);
    await fanouts.recordPark(job, 1, 'retries-exhausted', 'chunk 1: publish failed');
    // Chunk 0's two are still on their way.
    expect(await status(job)).toMatchObject({ state: 'sending', targeted: 5, delivered: 2, inFlight: 3 });
    await delivered(job, ['21', '22']);
    expect(await status(job)).toMatchObject({ state: 'done', inFlight: 1 });
    // Had chunk 1 stored its third push for later, it would still come.
    expect(await t.db.scheduled.schedule([{ dueAt: new Date(Date.now() + 3_600_000), push: storedPush(job, '25') }])).toBe(1);
    expect(await status(job)).toMatchObject({ state: 'sending', inFlight: 1, scheduled: 1 });
  });

  // Before, the replay deleted the parked row, and a push of a parked chunk without one read as never coming: done while it went round again.
  it("a parked chunk's push parked and then replayed reads in flight until its new outcome", async () => {
    const job = randomUUID();
    await begin(job, 2);
    await fanouts.linkNext(job, 0, null);
    expect(await fanouts.recordChunk(job, 0, { devices: 2, targeted: 2, noDevice: 0, emitted: 2, outcomes: [], planned: plannedFor(['31', '32']) })).toBe('recorded');
    await delivered(job, ['31']);
    await t.db.jobs.recordOutcomes([{ pushId: derivePushId(job, '32'), jobId: job, outcome: 'parked', code: 'provider-down' }]);
    await fanouts.recordPark(job, 0, 'retries-exhausted', 'chunk 0: finish failed');
    expect(await status(job)).toMatchObject({ state: 'done', inFlight: 0, parked: 1 });
    const replay = await startReplayedOutcomes(t.db.kysely);
    await new Promise((r) => setTimeout(r, 5));
    await replay.onReplayed([{ pushId: derivePushId(job, '32'), jobId: job }]);
    expect(replay.cleared).toBe(1);
    expect(await status(job)).toMatchObject({ state: 'sending', inFlight: 1, parked: 0 });
    await delivered(job, ['32']);
    expect(await status(job)).toMatchObject({ state: 'done', inFlight: 0, delivered: 2 });
  });

  it('derives push ids in SQL as derivePushId does', async () => {
    for (const [job, device] of [[randomUUID(), '42'], ['jöb ✓ 名', '9007199254740993']] as const) {
      const { rows } = await sql<{ id: string }>`select ${derivedPushId(sql`${job}::text`, sql`${device}::text`)}::text as id`.execute(t.db.kysely);
      expect(rows[0]?.id).toBe(derivePushId(job, device));
    }
  });

  it('cancelling a fan-out whose planned chunk task is parked ends cancelled: its pushes without an outcome are recorded cancelled, a delivery stays delivered', async () => {
    const job = randomUUID();
    await begin(job, 5);
    await fanouts.linkNext(job, 0, 'c1');
    expect(await fanouts.recordChunk(job, 0, { devices: 3, targeted: 3, noDevice: 0, emitted: 3, outcomes: [], planned: plannedFor(['31', '32', '33']) })).toBe('recorded');
    await delivered(job, ['31']);
    await fanouts.recordPark(job, 0, 'delivery-limit', 'chunk 0: delivered 5 times without an answer');
    // Chunk 1 planned too, its task not yet run (or its demuxer gone).
    await fanouts.linkNext(job, 1, null);
    expect(await fanouts.recordChunk(job, 1, { devices: 1, targeted: 1, noDevice: 0, emitted: 1, outcomes: [], planned: plannedFor(['34']) })).toBe('recorded');
    expect(await cancelJobFully(t.db, job)).toEqual({ known: true, fanout: true, scheduled: 0, alreadyDone: false });
    expect(await status(job)).toMatchObject({ state: 'cancelled', targeted: 4, delivered: 1, inFlight: 0, skipped: { cancelled: 3 } });
    // A push of the chunk the pusher delivered before it heard of the cancel is delivered.
    await delivered(job, ['32']);
    expect(await status(job)).toMatchObject({ state: 'cancelled', delivered: 2, inFlight: 0, skipped: { cancelled: 2 } });
  });

  it('two chunks that read a device which changed hands meanwhile count it once: the one recording second is told, whichever it is', async () => {
    const job = randomUUID();
    const token = randomUUID().replaceAll('-', '').padEnd(64, '0');
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'demo', platform: 'apns', token, userId: 'ma', eventAt: '2025-01-01T00:00:00Z' });
    await begin(job, 2);
    // The phone logs in as mb while the fan-out runs: chunk 0 read it as ma's, chunk 1 as mb's.
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'demo', platform: 'apns', token, userId: 'mb', eventAt: new Date().toISOString() });
    const { id } = await t.db.kysely.selectFrom('devices').select(sql<string>`id::text`.as('id')).where('token', '=', token).executeTakeFirstOrThrow();
    const since = new Date(Date.now() - 60_000);
    const chunkOf = (user: string, deviceIds: string[]) => movedChunk(deviceIds, user, since);
    await fanouts.linkNext(job, 0, 'c1');
    await fanouts.linkNext(job, 1, null);
    // Both checked before either recorded (the check outside the transaction passed both): chunk 1 records first.
    expect(await fanouts.recordChunk(job, 1, chunkOf('mb', [id]))).toBe('recorded');
    expect(await fanouts.recordChunk(job, 0, chunkOf('ma', [id]))).toEqual({ elsewhere: new Set([id]) });
    expect(await status(job)).toMatchObject({ targeted: 1 });
    // Planned again without it.
    expect(await fanouts.recordChunk(job, 0, chunkOf('ma', []))).toBe('recorded');
    await fanouts.finishChunk(job, 0);
    await fanouts.finishChunk(job, 1);
    expect(await status(job)).toMatchObject({ state: 'sending', targeted: 1, inFlight: 1 });
    await delivered(job, [id]);
    expect(await status(job)).toMatchObject({ state: 'done', targeted: 1, delivered: 1, inFlight: 0 });
  });

  it("a token replaced while a broadcast runs is one device: the old row read by one chunk and its replacement by another count once, whichever records second", async () => {
    const register = (token: string, eventAt: string, previousToken?: string) => registerDemo(token, 'rot', eventAt, previousToken);
    const idOf = deviceIdOf;
    const since = new Date(Date.now() - 60_000);
    const chunkOf = (deviceIds: string[]) => movedChunk(deviceIds, 'rot', since, true);
    for (const order of ['old first', 'new first'] as const) {
      const job = randomUUID();
      const [old, rotated, third] = [1, 2, 3].map(() => randomUUID().replaceAll('-', '').padEnd(64, '0')) as [string, string, string];
      await register(old, '2025-01-01T00:00:00Z');
      await begin(job, 2);
      // Chunk 0 read the old token live; then the app registered its new one, and chunk 1 read that (the new row's id comes later).
      await register(rotated, new Date().toISOString(), old);
      const [oldId, newId] = [await idOf(old), await idOf(rotated)];
      await fanouts.linkNext(job, 0, 'c1');
      await fanouts.linkNext(job, 1, null);
      const [first, second] = order === 'old first' ? [[0, oldId], [1, newId]] as const : [[1, newId], [0, oldId]] as const;
      expect(await fanouts.recordChunk(job, first[0], chunkOf([first[1]]))).toBe('recorded');
      expect(await fanouts.recordChunk(job, second[0], chunkOf([second[1]]))).toEqual({ elsewhere: new Set([second[1]]) });
      expect(await fanouts.recordChunk(job, second[0], chunkOf([]))).toBe('recorded');
      expect(await status(job)).toMatchObject({ targeted: 1 });
      // A device replaced before the fan-out began, or unrelated, is its chunk's as any.
      if (order === 'new first') {
        await register(third, new Date().toISOString(), rotated);
        const job2 = randomUUID();
        await begin(job2, 2);
        await fanouts.linkNext(job2, 0, 'c1');
        await fanouts.linkNext(job2, 1, null);
        expect(await fanouts.recordChunk(job2, 0, chunkOf([await idOf(third)]))).toBe('recorded');
        expect(await fanouts.recordChunk(job2, 1, chunkOf([]))).toBe('recorded');
      }
    }
  });

  it("a replacement is not left out for a push planned for the old token's former user: that push will be dropped as reassigned, and the new holder's is the only one", async () => {
    const job = randomUUID();
    const [old, rotated] = [1, 2].map(() => randomUUID().replaceAll('-', '').padEnd(64, '0')) as [string, string];
    const [register, idOf] = [registerDemo, deviceIdOf];
    await register(old, 'bob', '2025-01-01T00:00:00Z');
    await begin(job, 2);
    const since = new Date(Date.now() - 60_000);
    const chunkOf = (deviceIds: string[], user: string) => movedChunk(deviceIds, user, since);
    await fanouts.linkNext(job, 0, 'c1');
    await fanouts.linkNext(job, 1, null);
    // Chunk 0 planned the phone for bob (a member of the topic); then alice signed in on it, and its token was replaced.
    expect(await fanouts.recordChunk(job, 0, chunkOf([await idOf(old)], 'bob'))).toBe('recorded');
    await register(old, 'alice', new Date(Date.now() - 1_000).toISOString());
    await register(rotated, 'alice', new Date().toISOString(), old);
    expect(await fanouts.recordChunk(job, 1, chunkOf([await idOf(rotated)], 'alice'))).toBe('recorded');
  });

  it('cancel stops the chain: a chunk is refused after it, the pushers see the job, the status says cancelled', async () => {
    const job = randomUUID();
    await begin(job);
    const before = new Date(Date.now() - 1000);
    await fanouts.linkNext(job, 0, 'c1');
    await fanouts.recordChunk(job, 0, { devices: 2, targeted: 2, noDevice: 0, emitted: 2, outcomes: [], planned: NONE });
    expect(await cancelJobFully(t.db, job)).toEqual({ known: true, fanout: true, scheduled: 0, alreadyDone: false });
    expect(await fanouts.state(job)).toBe('cancelled');
    expect(await fanouts.recordChunk(job, 1, { devices: 2, targeted: 2, noDevice: 0, emitted: 2, outcomes: [], planned: NONE })).toBe('cancelled');
    expect((await createCancelledJobsReader(t.db.kysely).since(before, 100)).map((r) => r.jobId)).toContain(job);
    // The two pushes already published are dropped by a pusher and recorded as cancelled.
    await t.db.jobs.recordOutcomes(['a', 'b'].map((d) => ({ pushId: derivePushId(job, d), jobId: job, outcome: 'cancelled' as const })));
    expect(await status(job)).toMatchObject({ state: 'cancelled', targeted: 2, inFlight: 0, skipped: { cancelled: 2 } });
    // A second cancel finds no running fan-out.
    expect((await cancelJobFully(t.db, job)).fanout).toBe(false);
  });

  it('an audience job cancelled while it waited for the demuxer starts its fan-out cancelled: no chunk to read, not running', async () => {
    const job = randomUUID();
    await t.db.jobs.accept([{ id: job, app: 'demo', team: null }]); // the API records the job it accepts
    expect(await cancelJobFully(t.db, job)).toEqual({ known: true, fanout: false, scheduled: 0, alreadyDone: false });
    expect(await begin(job)).toEqual({ created: true, state: 'cancelled', open: [] });
    expect(await fanouts.chunk(job, 0)).toBeUndefined();
    expect((await fanouts.running(100)).map((r) => r.jobId)).not.toContain(job);
    expect((await status(job)).state).toBe('cancelled');
    // Redelivered, the job finds it so and starts nothing.
    expect(await begin(job)).toEqual({ created: false, state: 'cancelled', open: [] });
  });

  it('a user job cancelled is listed for the pushers too', async () => {
    const job = randomUUID();
    const before = new Date(Date.now() - 1000);
    await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 1, outcome: 'fanned-out' }]);
    expect(await cancelJobFully(t.db, job)).toEqual({ known: true, fanout: false, scheduled: 0, alreadyDone: false });
    expect((await createCancelledJobsReader(t.db.kysely).since(before, 100)).map((r) => r.jobId)).toContain(job);
    // Its push is still in flight (a pusher drops it): cancelling, then cancelled once it is recorded.
    expect((await status(job)).state).toBe('cancelling');
    await t.db.jobs.recordOutcomes([{ pushId: randomUUID(), jobId: job, outcome: 'cancelled', code: 'job-cancelled', reason: 'the job was cancelled' }]);
    expect((await status(job)).state).toBe('cancelled');
  });

  it('a job Herald does not have yet (published straight to RabbitMQ, not yet demuxed) is not marked, and says so', async () => {
    const job = randomUUID();
    const before = new Date(Date.now() - 1000);
    expect(await cancelJobFully(t.db, job)).toEqual({ known: false, fanout: false, scheduled: 0, alreadyDone: false });
    expect((await createCancelledJobsReader(t.db.kysely).since(before, 100)).map((r) => r.jobId)).not.toContain(job);
  });

  it('lists running fan-outs with their progress for the dashboard', async () => {
    const job = randomUUID();
    await begin(job, 10);
    await fanouts.recordChunk(job, 0, { devices: 4, targeted: 4, noDevice: 0, emitted: 4, outcomes: [], planned: NONE });
    await t.db.jobs.recordOutcomes([{ pushId: derivePushId(job, 'x'), jobId: job, outcome: 'delivered' }]);
    const running = (await fanouts.running(100)).find((r) => r.jobId === job);
    expect(running).toMatchObject({ state: 'expanding', size: 10, expanded: 4, delivered: 1, targeted: 4 });
  });
});
