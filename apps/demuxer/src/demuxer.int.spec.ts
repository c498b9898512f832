import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { derivePushId, sendQueueFor, type PushJobInput, type Registration } from '@herald/contracts';
import { recordParkedJobs } from './job-parks.ts';
import { cancelJobFully, toJobStatus, type ScheduledPushInput, type TargetRequest } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, HeraldHeaders, heraldTopology, type Broker, type InboundMessage, type Publisher } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, createTestVhost, peekMessages, waitFor, type TestDatabase, type TestVhost } from '@herald/testing';
import { createDemuxerHandler, type DemuxerDeps } from './demuxer.ts';
import { createDemuxerMetrics } from './demuxer-metrics.ts';
import { WaveMonitor } from './wave-monitor.ts';

const logger = createLogger({ service: 'demuxer-test', level: 'silent' });
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;
beforeAll(async () => {
  t = await createTestDatabase('demuxparts');
  vhost = await createTestVhost('demuxparts');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'demuxer-test' });
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
const apnsReady = async () => (await broker.queueCounts([sendQueueFor('apns')])).get(sendQueueFor('apns'))?.ready ?? 0;

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

  it('publishes a part in slices of at most publishSlice pushes, each confirmed before the next is built (a user with thousands of devices)', async () => {
    const sizes: number[] = [];
    const publisher: Publisher = {
      ...broker.publisher,
      publishMany: (messages, options) => (sizes.push(messages.length), broker.publisher.publishMany(messages, options)),
    };
    const before = await apnsReady();
    expect(await demuxer({ publisher, publishSlice: 5 })([message(jobFor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]))])).toEqual([{ kind: 'ack' }]);
    expect(sizes).toEqual([5, 5, 2]);
    await waitFor('12 more pushes in the send queue', async () => ((await apnsReady()) === before + 12 ? true : undefined), { timeoutMs: 5_000 }).catch(() => undefined);
    expect(await apnsReady()).toBe(before + 12);
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

  // Before, its row was stamped when the demuxer got to it: two hours late, and retained from then.
  it("a job that waited in push.jobs records when its publisher's client accepted it, sent or parked", async () => {
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    const waited = { ...jobFor([1]), acceptedAt: twoHoursAgo.toISOString() };
    const broken = { ...jobFor([2]), app: 'no-such-app', acceptedAt: twoHoursAgo.toISOString() };
    const handle = demuxer({});
    expect(await handle([{ ...message(waited), body: Buffer.from(JSON.stringify(waited)) }])).toEqual([{ kind: 'ack' }]);
    const parked = await handle([{ ...message(broken), body: Buffer.from(JSON.stringify(broken)) }]);
    expect(parked).toEqual([expect.objectContaining({ kind: 'park', code: 'unknown-app' })]);
    await recordParkedJobs(t.db.jobs)({ message: { ...message(broken), body: Buffer.from(JSON.stringify(broken)) }, code: 'unknown-app', reason: 'no app' } as Parameters<ReturnType<typeof recordParkedJobs>>[0]);
    const rows = await t.db.kysely.selectFrom('jobs').select(['id', 'accepted_at']).where('id', 'in', [waited.id, broken.id]).execute();
    expect(new Map(rows.map((r) => [r.id, r.accepted_at.toISOString()]))).toEqual(new Map([[waited.id, twoHoursAgo.toISOString()], [broken.id, twoHoursAgo.toISOString()]]));
  });
});

/** A wave monitor that counts the pushes it was told of. */
class CountingWaves extends WaveMonitor {
  told = 0;
  override add(pushes: Parameters<WaveMonitor['add']>[0], now: Date): ReturnType<WaveMonitor['add']> {
    this.told += pushes.length;
    return super.add(pushes, now);
  }
}
const nextMonth = () => ({ at: new Date(Date.now() + 30 * 86_400_000).toISOString() });
const jobOf = (extra: Partial<PushJobInput> = {}): PushJobInput => ({ ...jobFor([0, 1, 2, 3]), ...extra });
/** As the HTTP API does: the job's row is written when it is accepted, so a cancel finds it while it waits in push.jobs. */
const accepted = (job: PushJobInput) => t.db.jobs.accept([{ id: job.id, app: job.app, team: null }]);
const stored = (jobId: string) => t.db.kysely.selectFrom('scheduled_pushes').select('push_id').where('job_id', '=', jobId).execute();

/** The job's status as GET /v1/jobs/:id shows it; it must add up with every push cancelled. */
async function expectAllCancelled(jobId: string): Promise<void> {
  const record = await t.db.jobs.status(jobId);
  const s = toJobStatus(record ?? expect.fail(`no job ${jobId}`));
  expect(s).toMatchObject({ state: 'cancelled', targeted: 4, delivered: 0, invalid: 0, failed: 0, parked: 0, scheduled: 0, inFlight: 0 });
  expect(s.skipped).toEqual({ optedOut: 0, muted: 0, noDevice: 0, expired: 0, cancelled: 4 });
  const pushes = await t.db.jobs.pushes(jobId, { limit: 10 });
  expect(pushes.map((p) => [p.outcome, p.code, p.platform])).toEqual(Array.from({ length: 4 }, () => ['cancelled', 'cancelled', 'apns']));
  expect(await stored(jobId)).toEqual([]);
}

describe('demuxer: a job cancelled before its pushes are sent or stored', () => {
  it('a job cancelled while it waited in push.jobs: none of its pushes published or stored, each recorded cancelled; the rest of the batch goes', async () => {
    const before = await apnsReady();
    const waves = new CountingWaves(2000, 60);
    const [now, later, live] = [jobOf(), jobOf({ deliverAt: nextMonth() }), jobOf()];
    for (const j of [now, later, live]) await accepted(j);
    for (const j of [now, later]) expect(await cancelJobFully(t.db, j.id)).toEqual({ known: true, fanout: false, scheduled: 0, alreadyDone: false });
    expect(await demuxer({ scheduling: { store: t.db.scheduled, wave: waves, horizonDays: 366, slackMs: 1000 } })([now, later, live].map(message))).toEqual([{ kind: 'ack' }, { kind: 'ack' }, { kind: 'ack' }]);
    await expectAllCancelled(now.id);
    await expectAllCancelled(later.id);
    // Only the live job's four pushes reached the send queue (the count may trail the confirms by a moment).
    await new Promise((r) => setTimeout(r, 200));
    expect((await apnsReady()) - before).toBe(4);
    // Nothing of the cancelled month-ahead job counts towards a wave.
    expect(waves.told).toBe(0);
  });

  it('a cancel that lands after the demuxer read the job and before it stored its pushes: nothing is left scheduled, each push counted once', async () => {
    const later = jobOf({ deliverAt: nextMonth() });
    await accepted(later);
    let cancelled = 0;
    const handle = demuxer({
      scheduling: {
        // The cancel (mark, then remove what is stored: nothing yet) runs just before the store.
        store: { schedule: async (pushes: readonly ScheduledPushInput[]) => ((cancelled = (await cancelJobFully(t.db, later.id)).scheduled), t.db.scheduled.schedule(pushes)) },
        wave: new WaveMonitor(2000, 60),
        horizonDays: 366,
        slackMs: 1000,
      },
    });
    expect(await handle([message(later)])).toEqual([{ kind: 'ack' }]);
    expect(cancelled).toBe(0);
    await expectAllCancelled(later.id);
    // The job redelivered (its ack lost): still nothing stored, nothing counted twice.
    expect(await demuxer({})([message(later)])).toEqual([{ kind: 'ack' }]);
    await expectAllCancelled(later.id);
  });
});

/** A P-256 public key (uncompressed point, base64url), as a browser's p256dh is. */
function p256(): string {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]).toString('base64url');
}
const webReady = async () => (await broker.queueCounts([sendQueueFor('web')])).get(sendQueueFor('web'))?.ready ?? 0;
/** About 4,000 bytes of JSON: within APNs' and FCM's 4,096, beyond Web Push's 3,993. */
const big = { title: 'big', data: { blob: 'x'.repeat(3900) } };

describe("demuxer: Web Push's rules for an app without VAPID keys of its own", () => {
  // u0 … u11 of "parts" have a phone each; u1 a browser too, signed with the web-pusher's WEB_PUSH_VAPID_* pair ("parts" has no keys).
  beforeAll(async () => {
    const browser = { version: 1, kind: 'register', app: 'parts', platform: 'web', token: 'https://fcm.googleapis.com/fcm/send/u1', userId: 'u1', keys: { p256dh: p256(), auth: randomBytes(16).toString('base64url') }, eventAt: '2025-01-01T00:00:00Z' };
    await t.db.devices.applyRegistrations([browser as Registration]);
  });
  const to = (u: number, content: PushJobInput['content']): PushJobInput => ({ ...jobFor([u]), content });
  const settled = async (apns: number, web: number) =>
    waitFor('pushes in the send queues', async () => ((await apnsReady()) === apns && (await webReady()) === web ? true : undefined), { timeoutMs: 5_000 }).catch(() => undefined);

  it("parks a job its web pushes would break when its targets include a browser, whole, as a job breaking one platform's rule is; the rest of the batch goes", async () => {
    const [apns, web] = [await apnsReady(), await webReady()];
    const [toBrowser, toPhone, small] = [to(1, big), to(0, big), to(1, { title: 'hi' })];
    const outcomes = await demuxer({})([toBrowser, toPhone, small].map(message));
    expect(outcomes[0]).toEqual({ kind: 'park', code: 'payload-too-large', reason: expect.stringMatching(/^content: Web Push: payload is 40\d\d bytes; Web Push allows 3993 bytes/) as unknown });
    expect(outcomes.slice(1)).toEqual([{ kind: 'ack' }, { kind: 'ack' }]);
    // u0's phone gets the big job, u1's phone and browser the small one; nothing of the parked job.
    await settled(apns + 2, web + 1);
    expect([(await apnsReady()) - apns, (await webReady()) - web]).toEqual([2, 1]);
    // Not recorded as targeted: push.jobs' onParked records the park, as for a park at admission.
    expect((await t.db.jobs.get(toBrowser.id))?.targeted ?? 0).toBe(0);
    expect((await t.db.jobs.get(toPhone.id))?.targeted).toBe(1);
  });

  // One opted-out user's browser parked the whole job, phones included.
  it('a browser its user opted out of the job\'s category does not hold the job to them: the other phones get it', async () => {
    await t.db.preferences.addOptOut('u1', 'promo', 'parts');
    const [apns, web] = [await apnsReady(), await webReady()];
    const promo = { ...to(0, big), category: 'promo', userIds: ['u0', 'u1'] };
    expect(await demuxer({})([message(promo)])).toEqual([{ kind: 'ack' }]);
    await settled(apns + 1, web);
    expect([(await apnsReady()) - apns, (await webReady()) - web]).toEqual([1, 0]);
    // Scheduled, the browser is asked again when due (the opt-out may be gone by then), as planJob stores its push: held to the rules.
    const later = { ...promo, id: randomUUID(), deliverAt: nextMonth() };
    expect(await demuxer({})([message(later)])).toEqual([{ kind: 'park', code: 'payload-too-large', reason: expect.stringMatching(/Web Push allows 3993 bytes/) as unknown }]);
  });

  it('a data-only job without content.web is not held to them: it goes to no browser, the phone gets it', async () => {
    const [apns, web] = [await apnsReady(), await webReady()];
    const data = to(1, { data: { blob: 'x'.repeat(3900) } });
    expect(await demuxer({})([message(data)])).toEqual([{ kind: 'ack' }]);
    expect((await t.db.jobs.get(data.id))?.targeted).toBe(1);
    await settled(apns + 1, web);
    expect([(await apnsReady()) - apns, (await webReady()) - web]).toEqual([1, 0]);
  });
});

describe('demuxer: a job handled again after a fan-out that recorded it and published nothing', () => {
  const token = () => randomBytes(32).toString('hex');
  const [a1, a2, b1, c1] = [token(), token(), token(), token()];
  const deviceOf = new Map<string, string>();
  const kill = (tok: string, platform: 'apns' | 'web' = 'apns') => t.db.devices.invalidate({ app: 'parts', platform, token: tok, reason: 'Unregistered', observedAt: new Date() });
  const revive = (tok: string, user: string) =>
    t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: tok, userId: user, eventAt: new Date().toISOString() });
  beforeAll(async () => {
    for (const [user, tok] of [['again-a', a1], ['again-a', a2], ['again-b', b1], ['again-c', c1]] as const) {
      await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: tok, userId: user, eventAt: '2025-01-01T00:00:00Z' });
    }
    const rows = await t.db.kysely.selectFrom('devices').select(['id', 'token']).where('token', 'in', [a1, a2, b1, c1]).execute();
    for (const r of rows) deviceOf.set(r.token, String(r.id));
    // c's only device died an hour ago, before any of these jobs: no pass counts it.
    await kill(c1);
    await t.db.kysely.updateTable('devices').set({ updated_at: new Date(Date.now() - 60 * 60_000) }).where('token', '=', c1).execute();
  });
  // Each test starts with a's and b's devices alive (registered again after it killed them).
  afterEach(async () => {
    await revive(a2, 'again-a');
    await revive(b1, 'again-b');
  });
  const brokenBroker = { publish: () => Promise.reject(new Error('channel closed')), publishMany: () => Promise.reject(new Error('channel closed')) };
  /** The devices of the job's pushes in the APNs send queue. */
  const queuedDevices = async (jobId: string) =>
    (await peekMessages(vhost.name, sendQueueFor('apns'), 500))
      .map((m) => JSON.parse(m.payload) as { jobId: string; deviceId: string })
      .filter((p) => p.jobId === jobId)
      .map((p) => p.deviceId)
      .sort();
  const jobOfUsers = (): PushJobInput => ({ id: randomUUID(), app: 'parts', category: 'social', content: { title: 'Again' }, userIds: ['again-a', 'again-b', 'again-c'] });
  const statusOf = async (jobId: string) => toJobStatus((await t.db.jobs.status(jobId)) ?? expect.fail(`no job ${jobId}`));
  const pushOf = (jobId: string, tok: string) => derivePushId(jobId, deviceOf.get(tok) ?? '');

  it("a retry counts the devices that died since the first pass counted them as invalid pushes, unsent, so the job's total adds up", async () => {
    const job = jobOfUsers();
    await accepted(job);
    await expect(demuxer({ publisher: brokenBroker })([message(job)])).rejects.toThrow('channel closed');
    // The first pass recorded its total (a1, a2, b1, and c without a device) and published nothing.
    expect(await t.db.jobs.get(job.id)).toMatchObject({ targeted: 4, noDevice: 1 });
    await kill(a2);
    await kill(b1); // b's only device
    // Back from the retry queue (its copy carries the retry reason).
    expect(await demuxer({})([{ ...message(job), headers: { [HeraldHeaders.retryReason]: 'channel closed' } }])).toEqual([{ kind: 'ack' }]);
    await waitFor("a1's push queued", async () => ((await queuedDevices(job.id)).length >= 1 ? true : undefined), { timeoutMs: 5_000 });
    expect(await queuedDevices(job.id)).toEqual([deviceOf.get(a1)]);
    // a2's and b1's pushes are invalid, none sent; a1's is the one in flight: 4 = 1 + 2 + 1 without a device.
    expect(await statusOf(job.id)).toMatchObject({ demuxOutcome: 'fanned-out', targeted: 4, invalid: 2, inFlight: 1, skipped: { noDevice: 1 } });
    const pushes = await t.db.jobs.pushes(job.id, { limit: 10 });
    expect(pushes.filter((p) => p.outcome === 'invalid').map((p) => [p.deviceId, p.code]).sort()).toEqual(
      [a2, b1].map((tok) => [deviceOf.get(tok), 'invalidated']).sort(),
    );
  });

  it('a retry keeps the outcome a push of the earlier pass already has: a dead device does not turn a provider\'s answer into another', async () => {
    const job = jobOfUsers();
    // The earlier pass published its pushes (its ack was lost); a pusher had an answer for a2's.
    expect(await demuxer({})([message(job)])).toEqual([{ kind: 'ack' }]);
    await t.db.jobs.recordOutcomes([{ pushId: pushOf(job.id, a2), jobId: job.id, outcome: 'failed', code: 'BadDeviceToken', reason: 'the provider refused it', platform: 'apns', deviceId: deviceOf.get(a2) ?? '' }]);
    await kill(a2);
    expect(await demuxer({})([{ ...message(job), redelivered: true }])).toEqual([{ kind: 'ack' }]);
    const pushes = await t.db.jobs.pushes(job.id, { limit: 10 });
    expect(pushes.map((p) => [p.deviceId, p.outcome, p.code])).toContainEqual([deviceOf.get(a2), 'failed', 'BadDeviceToken']);
    expect(await statusOf(job.id)).toMatchObject({ targeted: 4, failed: 1, invalid: 0, skipped: { noDevice: 1 } });
  });

  /**
   * A job due next month to a new user's two phones, whose first pass recorded it and stored both
   * pushes, then failed; the second phone has died since. Answers the job and that phone's push id.
   */
  async function scheduledThenDied(): Promise<{ job: PushJobInput; diedPush: string }> {
    const user = `again-${randomUUID()}`;
    const [p1, p2] = [token(), token()];
    const phone = (tok: string) => ({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: tok, userId: user, eventAt: '2025-01-01T00:00:00Z' }) as const;
    await t.db.devices.applyRegistrations([phone(p1), phone(p2)]);
    const job: PushJobInput = { id: randomUUID(), app: 'parts', category: 'social', content: { title: 'Next month' }, userIds: [user], deliverAt: nextMonth() };
    await accepted(job);
    // The first pass recorded the job and stored its pushes, then ended before its ack (a crash).
    const crashing = { ...t.db.scheduled, schedule: async (rows: Parameters<typeof t.db.scheduled.schedule>[0]) => (await t.db.scheduled.schedule(rows), Promise.reject(new Error('process ended'))) };
    await expect(demuxer({ scheduling: { store: crashing, wave: new WaveMonitor(2000, 60), horizonDays: 366, slackMs: 1000 } })([message(job)])).rejects.toThrow('process ended');
    expect(await statusOf(job.id)).toMatchObject({ targeted: 2, scheduled: 2 });
    await kill(p2);
    const [died] = await t.db.kysely.selectFrom('devices').select('id').where('token', '=', p2).execute();
    return { job, diedPush: derivePushId(job.id, String(died?.id)) };
  }

  it("a scheduled job's retry takes a dead device's stored push out of the store and counts it invalid", async () => {
    const { job } = await scheduledThenDied();
    expect(await demuxer({})([{ ...message(job), redelivered: true }])).toEqual([{ kind: 'ack' }]);
    // The live phone's push still stored; the dead one's out of the store (nothing would send it to the dead token) and invalid: 2 = 1 + 1.
    expect(await statusOf(job.id)).toMatchObject({ demuxOutcome: 'fanned-out', targeted: 2, scheduled: 1, invalid: 1, inFlight: 1 });
    expect((await stored(job.id)).length).toBe(1);
  });

  it("a dead device's stored push a descheduler is releasing is not waited for: the retry goes on, and leaves the push to the pusher's claim", async () => {
    const { job, diedPush } = await scheduledThenDied();
    // A descheduler's release holds the dead phone's row (its claim's lock) while the retry runs.
    const retried = await t.db.kysely.transaction().execute(async (release) => {
      await release.selectFrom('scheduled_pushes').select('push_id').where('push_id', '=', diedPush).forUpdate().execute();
      const outcome = await Promise.race([
        demuxer({})([{ ...message(job), redelivered: true }]),
        new Promise((resolve) => setTimeout(() => resolve('waited for the release'), 5_000)),
      ]);
      // Its push gets no outcome beside the release's: still stored, in flight, 2 = 2.
      expect(await statusOf(job.id)).toMatchObject({ targeted: 2, scheduled: 2, invalid: 0, inFlight: 2 });
      return outcome;
    });
    expect(retried).toEqual([{ kind: 'ack' }]);
  });

  it("one part holding first deliveries and a retry: each read as it should, and a job's retried copy keeps its dead pushes beside a first copy of it", async () => {
    const [fresh, retried] = [jobOfUsers(), jobOfUsers()];
    await accepted(retried);
    await expect(demuxer({ publisher: brokenBroker })([message(retried)])).rejects.toThrow('channel closed');
    await kill(a2);
    // The retried copy, then a first delivery of the same job (published twice over AMQP), last.
    const part = [message(fresh), { ...message(retried), redelivered: true }, message(retried)];
    expect(await demuxer({})(part)).toEqual([{ kind: 'ack' }, { kind: 'ack' }, { kind: 'ack' }]);
    const [d1, db1] = [a1, b1].map((tok) => deviceOf.get(tok) ?? '');
    await waitFor('the pushes queued', async () => ((await queuedDevices(retried.id)).length >= 4 ? true : undefined), { timeoutMs: 5_000 });
    expect(await queuedDevices(fresh.id)).toEqual([d1, db1].sort());
    expect(await queuedDevices(retried.id)).toEqual([d1, d1, db1, db1].sort());
    expect(await statusOf(fresh.id)).toMatchObject({ targeted: 3, invalid: 0, inFlight: 2, skipped: { noDevice: 1 } });
    // a2's push, counted by the first pass, is invalid: 4 = 1 + 2 in flight + 1 without a device.
    expect(await statusOf(retried.id)).toMatchObject({ targeted: 4, invalid: 1, inFlight: 2, skipped: { noDevice: 1 } });
  });

  it('a first delivery of the job recorded after the first pass does not narrow what its retry looks for', async () => {
    const job = jobOfUsers();
    await accepted(job);
    await expect(demuxer({ publisher: brokenBroker })([message(job)])).rejects.toThrow('channel closed');
    // The first pass recorded it ten minutes ago; a2 died six minutes ago; a second copy of the job (a first delivery) is fanned out now.
    await t.db.kysely.updateTable('jobs').set({ demuxed_at: new Date(Date.now() - 10 * 60_000) }).where('id', '=', job.id).execute();
    await kill(a2);
    await t.db.kysely.updateTable('devices').set({ updated_at: new Date(Date.now() - 6 * 60_000) }).where('token', '=', a2).execute();
    expect(await demuxer({})([message(job)])).toEqual([{ kind: 'ack' }]);
    // The first pass's retry still finds a2, which that pass counted.
    expect(await demuxer({})([{ ...message(job), redelivered: true }])).toEqual([{ kind: 'ack' }]);
    expect(await statusOf(job.id)).toMatchObject({ targeted: 4, invalid: 1, inFlight: 2, skipped: { noDevice: 1 } });
  });

  it("a retry after the user's token was replaced (previousToken) addresses the device as its first pass did: the same push, which the pusher moves, not a second one", async () => {
    const rotate = (user: string, from: string, to: string) =>
      t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: to, previousToken: from, userId: user, eventAt: new Date().toISOString() });
    const idOf = async (tok: string) => String((await t.db.kysely.selectFrom('devices').select('id').where('token', '=', tok).executeTakeFirstOrThrow()).id);
    const [after, before] = [`rotated-${randomUUID()}`, `rotated-${randomUUID()}`];
    const [after1, after2, before1, before2] = [token(), token(), token(), token()];
    await t.db.devices.applyRegistrations([after1, before1].map((tok, i) => ({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: tok, userId: [after, before][i] ?? '', eventAt: '2025-01-01T00:00:00Z' })));
    // One user's phone got its new token just before the job's first pass, the other's after it.
    await rotate(before, before1, before2);
    const job: PushJobInput = { id: randomUUID(), app: 'parts', category: 'social', content: { title: 'Again' }, userIds: [after, before] };
    expect(await demuxer({})([message(job)])).toEqual([{ kind: 'ack' }]);
    await rotate(after, after1, after2);
    // Its ack was lost: the job comes back.
    expect(await demuxer({})([{ ...message(job), redelivered: true }])).toEqual([{ kind: 'ack' }]);
    const [old, replaced] = [await idOf(after1), await idOf(before2)];
    await waitFor('both passes queued', async () => ((await queuedDevices(job.id)).length >= 4 ? true : undefined), { timeoutMs: 5_000 });
    // Each pass made the same two pushes: one id a phone, which the ledger sends once.
    expect(await queuedDevices(job.id)).toEqual([old, old, replaced, replaced].sort());
    // The old token replaced just before the first pass is counted as one that died in the minutes
    // before it (one invalid push more, as any device dead since five minutes before the job was
    // recorded: the sum still exact); the one replaced after it is the first pass's push.
    expect(await t.db.jobs.get(job.id)).toMatchObject({ targeted: 3 });
    expect((await t.db.jobs.pushes(job.id, { limit: 10 })).map((p) => [p.deviceId, p.outcome])).toEqual([[await idOf(before1), 'invalid']]);
  });

  it("a copy of the job published again over AMQP after the user's token was replaced is read as the first copy's retry: the same push, sent once, not a second to the new token", async () => {
    const user = `republished-${randomUUID()}`;
    const [old, rotated] = [token(), token()];
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: old, userId: user, eventAt: '2025-01-01T00:00:00Z' });
    const job: PushJobInput = { id: randomUUID(), app: 'parts', category: 'social', content: { title: 'Twice' }, userIds: [user, 'again-a'] };
    expect(await demuxer({})([message(job)])).toEqual([{ kind: 'ack' }]);
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: rotated, previousToken: old, userId: user, eventAt: new Date().toISOString() });
    await kill(a2);
    // The publisher's confirm was lost and it published the job again: a new message, no redelivery.
    expect(await demuxer({})([message(job)])).toEqual([{ kind: 'ack' }]);
    const idOf = async (tok: string) => String((await t.db.kysely.selectFrom('devices').select('id').where('token', '=', tok).executeTakeFirstOrThrow()).id);
    const [d1, d2, dOld] = [deviceOf.get(a1) ?? '', deviceOf.get(a2) ?? '', await idOf(old)];
    await waitFor('both copies queued', async () => ((await queuedDevices(job.id)).length >= 5 ? true : undefined), { timeoutMs: 5_000 });
    // Each copy addressed the rotated phone by its old device: one push id, which the ledger sends once.
    // a2 died between the copies: the first copy's push to it is the only one, counted invalid.
    expect(await queuedDevices(job.id)).toEqual([dOld, dOld, d1, d1, d2].sort());
    expect(await statusOf(job.id)).toMatchObject({ targeted: 3, invalid: 1, inFlight: 2 });
  });

  it("a retry of a job whose first pass read the phone's old token, and recorded the job after its rotation committed, addresses it as that read did: the same push, not a second to the new token", async () => {
    const user = `read-${randomUUID()}`;
    const [old, rotated] = [token(), token()];
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: old, userId: user, eventAt: '2025-01-01T00:00:00Z' });
    const job: PushJobInput = { id: randomUUID(), app: 'parts', category: 'social', content: { title: 'Read' }, userIds: [user] };
    // The rotation commits between the first pass's read and its record (a rotation held until after
    // the read, with its link written before it: device-audience.int.spec.ts).
    const rotate = () => t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: rotated, previousToken: old, userId: user, eventAt: new Date().toISOString() });
    const readThenRotate = async (requests: readonly TargetRequest[], now: Date) => {
      const found = await t.db.devices.findAudience(requests, now);
      await rotate();
      return found;
    };
    expect(await demuxer({ targets: { findAudience: readThenRotate } })([message(job)])).toEqual([{ kind: 'ack' }]);
    expect(await demuxer({})([{ ...message(job), redelivered: true }])).toEqual([{ kind: 'ack' }]);
    await waitFor('both passes queued', async () => ((await queuedDevices(job.id)).length >= 2 ? true : undefined), { timeoutMs: 5_000 });
    const dOld = String((await t.db.kysely.selectFrom('devices').select('id').where('token', '=', old).executeTakeFirstOrThrow()).id);
    expect(await queuedDevices(job.id)).toEqual([dOld, dOld]);
  });

  it("a retry after the rotated phone went to another user of the job makes that user's push, not the old one's (which would be dropped as reassigned)", async () => {
    const [alice, bob] = [`handoff-${randomUUID()}`, `handoff-${randomUUID()}`];
    const [t1, t2] = [token(), token()];
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: t1, userId: alice, eventAt: '2025-01-01T00:00:00Z' });
    const job: PushJobInput = { id: randomUUID(), app: 'parts', category: 'social', content: { title: 'Again' }, userIds: [alice, bob] };
    expect(await demuxer({})([message(job)])).toEqual([{ kind: 'ack' }]);
    // Alice's phone gets a new token, then bob signs in on it.
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: t2, previousToken: t1, userId: alice, eventAt: new Date(Date.now() - 1_000).toISOString() });
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'parts', platform: 'apns', token: t2, userId: bob, eventAt: new Date().toISOString() });
    expect(await demuxer({})([{ ...message(job), redelivered: true }])).toEqual([{ kind: 'ack' }]);
    const idOf = async (tok: string) => String((await t.db.kysely.selectFrom('devices').select('id').where('token', '=', tok).executeTakeFirstOrThrow()).id);
    await waitFor('both passes queued', async () => ((await queuedDevices(job.id)).length >= 2 ? true : undefined), { timeoutMs: 5_000 });
    expect(await queuedDevices(job.id)).toEqual([await idOf(t1), await idOf(t2)].sort());
  });

  it('a job no fan-out recorded counts and makes pushes for the live devices only', async () => {
    const [unrecorded, parked] = [jobOfUsers(), jobOfUsers()];
    const [d1, db1] = [a1, b1].map((tok) => deviceOf.get(tok) ?? '');
    await kill(a2);
    // Redelivered, but the pass before it failed before it recorded the job: nothing of the dead device was counted.
    await accepted(unrecorded);
    expect(await demuxer({})([{ ...message(unrecorded), redelivered: true }])).toEqual([{ kind: 'ack' }]);
    // Parked before any fan-out (its app was disabled), then replayed: its park counted no device.
    await t.db.jobs.recordJobParks([{ id: parked.id, app: parked.app, code: 'app-disabled', reason: 'app "parts" is disabled' }]);
    expect(await demuxer({})([{ ...message(parked), headers: { [HeraldHeaders.replayedAt]: new Date().toISOString() } }])).toEqual([{ kind: 'ack' }]);
    for (const [job, pushes, targeted] of [[unrecorded, [d1, db1], 3], [parked, [d1, db1], 3]] as const) {
      await waitFor('its pushes queued', async () => ((await queuedDevices(job.id)).length >= pushes.length ? true : undefined), { timeoutMs: 5_000 });
      expect(await queuedDevices(job.id)).toEqual([...pushes].sort());
      expect(await t.db.jobs.get(job.id)).toMatchObject({ targeted, noDevice: 1 });
    }
  });
});

describe('demuxer: a job given an id another job holds (published over AMQP, past the API’s 409)', () => {
  /** The users of the job's pushes in the APNs send queue. */
  const queuedUsers = async (jobId: string) =>
    (await peekMessages(vhost.name, sendQueueFor('apns'), 1000))
      .map((m) => JSON.parse(m.payload) as { jobId: string; userId: string })
      .filter((p) => p.jobId === jobId)
      .map((p) => p.userId)
      .sort();

  it('parks a job reusing an id with other content or for another app, sends nothing of it and leaves the first job’s status; a copy of the first job goes on', async () => {
    await t.db.apps.upsert({ id: 'parts-other', apnsTopic: 'com.herald.parts.other' });
    const handle = demuxer({});
    const first = jobFor([0, 1]);
    expect(await handle([message(first)])).toEqual([{ kind: 'ack' }]);
    await waitFor('the first job’s two pushes', async () => ((await queuedUsers(first.id)).length === 2 ? true : undefined), { timeoutMs: 5_000 });
    const status = await t.db.jobs.status(first.id);

    const otherContent = { ...first, content: { title: 'Something else' }, userIds: ['u2'] };
    const otherApp = { ...first, app: 'parts-other', userIds: ['u3'] };
    const outcomes = await handle([message(otherContent), message(otherApp), message(first)]);
    expect(outcomes[0]).toEqual({ kind: 'park', code: 'job-id-reused', reason: `job id "${first.id}" was accepted before with other content: a retry must repeat the job as it was, a new job needs a new id` });
    expect(outcomes[1]).toEqual({ kind: 'park', code: 'job-id-conflict', reason: `job id "${first.id}" is already used by another app` });
    expect(outcomes[2]).toEqual({ kind: 'ack' });
    // The copy of the first job publishes its two pushes again (the pushers' ledger drops them); nothing for u2 or u3.
    await waitFor('the copy’s pushes', async () => ((await queuedUsers(first.id)).length === 4 ? true : undefined), { timeoutMs: 5_000 });
    expect(await queuedUsers(first.id)).toEqual(['u0', 'u0', 'u1', 'u1']);
    expect(await t.db.jobs.status(first.id)).toEqual(status);
  });
});

describe('demuxer: rules that depend on the app’s APNs credentials', () => {
  it('parks a Live Activity job of an app that sends with a certificate, whole, as the API refuses it (Apple takes them over token authentication only)', async () => {
    await t.db.apps.upsert({ id: 'parts-cert', apnsTopic: 'com.herald.parts.cert' });
    // The sealed secret is never read here: the demuxer looks at the kind of credentials only.
    await t.db.kysely.updateTable('apps').set({ apns_auth: 'certificate', apns_secret: 'sealed' }).where('id', '=', 'parts-cert').execute();
    const handle = demuxer({});
    const activity = { ...jobFor([0]), app: 'parts-cert', content: { liveActivity: { event: 'update' as const, contentState: { score: '2-1' } } } };
    const alert = { ...jobFor([0]), app: 'parts-cert' };
    const [parkedJob, sent] = await handle([message(activity), message(alert)]);
    expect(parkedJob).toEqual({
      kind: 'park',
      code: 'provider-rules',
      reason: 'content.liveActivity: app "parts-cert" sends to APNs with a certificate, and Apple takes Live Activity pushes over token-based authentication only: give it a .p8 signing key',
    });
    expect(sent).toEqual({ kind: 'ack' });
  });
});
