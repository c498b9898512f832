import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { derivePushId, type DevicePush, type Platform } from '@herald/contracts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { createDatabase, type Database } from './database.ts';
import { cancelJob, cancelJobFully } from './cancel-job.ts';
import { createScheduledPushRepository, type DueRow, type ScheduledPushInput, type SkippedCounts } from './scheduled-push-repository.ts';

let t: SpecDatabase;
let other: Database;
beforeAll(async () => {
  t = await createSpecDatabase('sched');
  other = createDatabase({ url: t.url, schema: t.schema, poolSize: 4 });
});
afterAll(async () => {
  await other.close();
  await t.drop();
});

function pushes(n: number, dueAt: (i: number) => Date, opts: { jobId?: string; platform?: Platform } = {}): ScheduledPushInput[] {
  const jobId = opts.jobId ?? randomUUID();
  return Array.from({ length: n }, (_, i) => {
    const push: DevicePush = {
      version: 1,
      pushId: derivePushId(jobId, String(i)),
      jobId,
      deviceId: String(i),
      app: 'demo',
      platform: opts.platform ?? 'apns',
      token: `token-${i}`,
      userId: `u${i}`,
      content: { title: 'hi' },
      priority: 'high',
      acceptedAt: new Date().toISOString(),
    };
    return { dueAt: dueAt(i), push };
  });
}

const clear = () => t.db.kysely.deleteFrom('scheduled_pushes').execute();
const past = (ms: number) => new Date(Date.now() - ms);

describe('ScheduledPushRepository', () => {
  it('stores each push once, however often it is scheduled', async () => {
    await clear();
    const batch = pushes(3, () => past(0));
    expect(await t.db.scheduled.schedule(batch)).toBe(3);
    expect(await t.db.scheduled.schedule(batch)).toBe(0);
    const rows = await t.db.kysely.selectFrom('scheduled_pushes').selectAll().execute();
    expect(rows.map((r) => (r.payload as DevicePush).pushId).sort()).toEqual(batch.map((p) => p.push.pushId).sort());
  });

  it('releases only due rows of the platform, earliest first, and deletes them on success', async () => {
    await clear();
    const due = pushes(3, (i) => past(1000 * (3 - i)));
    await t.db.scheduled.schedule([...due, ...pushes(2, () => new Date(Date.now() + 60_000)), ...pushes(2, () => past(0), { platform: 'fcm' })]);
    const seen: string[] = [];
    expect(await t.db.scheduled.withDueBatch('apns', new Date(), 10, async (rows) => void seen.push(...rows.map((r) => r.pushId)))).toBe(3);
    expect(seen).toEqual(due.map((p) => p.push.pushId));
    expect(await t.db.scheduled.withDueBatch('apns', new Date(), 10, async () => undefined)).toBe(0);
    expect((await t.db.scheduled.nextDueAt('apns'))?.getTime()).toBeGreaterThan(Date.now());
  });

  it('hands back each push as the exact JSON text it was scheduled as, with its expiry and trace flag', async () => {
    await clear();
    const dueAt = new Date(Date.now() - 10);
    const [plain, expiring] = pushes(2, () => dueAt);
    if (plain === undefined || expiring === undefined) throw new Error('two pushes expected');
    expiring.push = { ...expiring.push, expiresAt: '2030-01-01T00:00:00.123Z', trace: true, content: { title: 'é ✓ "quoted"' } };
    await t.db.scheduled.schedule([plain, expiring]);
    const released: DueRow[] = [];
    await t.db.scheduled.withDueBatch('apns', new Date(), 10, async (rows) => void released.push(...rows));
    const byId = new Map(released.map((r) => [r.pushId, r]));
    expect(byId.get(plain.push.pushId)).toMatchObject({ dueAt, jobId: plain.push.jobId, expiresAt: undefined, trace: false, payload: JSON.stringify(plain.push) });
    expect(byId.get(expiring.push.pushId)).toMatchObject({ expiresAt: new Date('2030-01-01T00:00:00.123Z'), trace: true, payload: JSON.stringify(expiring.push) });
  });

  it('puts a batch back when the release fails', async () => {
    await clear();
    await t.db.scheduled.schedule(pushes(5, () => past(10)));
    await expect(t.db.scheduled.withDueBatch('apns', new Date(), 10, () => Promise.reject(new Error('broker down')))).rejects.toThrow('broker down');
    expect(await t.db.scheduled.withDueBatch('apns', new Date(), 10, async () => undefined)).toBe(5);
  });

  it('a batch left idle by its descheduler past idleInTransactionTimeoutMs is rolled back, and another descheduler releases its pushes', { timeout: 20_000 }, async () => {
    await clear();
    await t.db.scheduled.schedule(pushes(4, () => past(10)));
    const bounded = createDatabase({ url: t.url, schema: t.schema, poolSize: 1, idleInTransactionTimeoutMs: 1_000 });
    try {
      let holding!: () => void;
      const held = new Promise<void>((r) => (holding = r));
      // Claimed, then nothing more from its descheduler (gone, or stuck): the transaction idles.
      const stalled = bounded.scheduled.withDueBatch('apns', new Date(), 10, async () => {
        holding();
        await new Promise((r) => setTimeout(r, 5_000));
      });
      const failed = stalled.then(
        () => undefined,
        (err: unknown) => err,
      );
      await held;
      expect(await t.db.scheduled.withDueBatch('apns', new Date(), 10, async () => undefined)).toBe(0); // held by the stalled batch
      const seen: string[] = [];
      const started = Date.now();
      while (seen.length === 0 && Date.now() - started < 4_500) {
        await new Promise((r) => setTimeout(r, 50));
        await t.db.scheduled.withDueBatch('apns', new Date(), 10, async (rows) => void seen.push(...rows.map((r) => r.pushId)));
      }
      expect(seen).toHaveLength(4);
      expect(Date.now() - started).toBeLessThan(4_000); // not when the stalled one gave up
      expect(await failed).toBeInstanceOf(Error); // its commit finds the session ended: nothing of it was deleted
    } finally {
      await bounded.close();
    }
  });

  it('two concurrent claimers over 20,000 due rows release each row exactly once', async () => {
    await clear();
    const all = pushes(20_000, (i) => past(20_000 - i));
    await t.db.scheduled.schedule(all);
    const released = new Map<string, number>();
    const claimer = async (db: Database) => {
      let batches = 0;
      for (;;) {
        const n = await db.scheduled.withDueBatch('apns', new Date(), 500, async (rows) => {
          for (const r of rows) released.set(r.pushId, (released.get(r.pushId) ?? 0) + 1);
          await new Promise((resolve) => setTimeout(resolve, 1)); // hold the locks a moment, as a publish would
        });
        if (n === 0) return batches;
        batches++;
      }
    };
    const [a, b] = await Promise.all([claimer(t.db), claimer(other)]);
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
    expect(released.size).toBe(20_000);
    expect([...released.values()].every((n) => n === 1)).toBe(true);
    expect(await t.db.scheduled.nextDueAt('apns')).toBeUndefined();
  });

  it('tells, per platform, the pushes due before a time that are still stored: the earliest, and a count that stops at the cap', async () => {
    await clear();
    await t.db.scheduled.schedule([
      ...pushes(3, (i) => past(60_000 * (i + 1))),
      ...pushes(2, () => new Date(Date.now() + 60_000)),
      ...pushes(1, () => past(10_000), { platform: 'fcm' }),
    ]);
    const overdue = await t.db.scheduled.overdue(past(30_000), 2);
    expect(overdue).toEqual([{ platform: 'apns', count: 2, earliestDueAt: expect.any(Date) }]);
    expect(Date.now() - (overdue[0]?.earliestDueAt.getTime() ?? 0)).toBeGreaterThanOrEqual(180_000);
    expect((await t.db.scheduled.overdue(new Date())).map((o) => [o.platform, o.count]).sort()).toEqual([['apns', 3], ['fcm', 1]]);
  });

  it('cancels a job: removes its stored pushes and says how many', async () => {
    await clear();
    await t.db.scheduled.schedule([...pushes(4, () => new Date(Date.now() + 60_000), { jobId: 'cancel-me' }), ...pushes(2, () => past(0))]);
    expect(await cancelJob(t.db, 'cancel-me')).toBe(4);
    expect(await cancelJob(t.db, 'cancel-me')).toBe(0);
    expect(await t.db.kysely.selectFrom('scheduled_pushes').select('job_id').where('job_id', '=', 'cancel-me').execute()).toEqual([]);
  });

  it('a cancel does not wait for a release batch that holds some of the job\'s pushes (its publish may wait long for RabbitMQ)', async () => {
    await clear();
    await t.db.apps.upsert({ id: 'demo' });
    await t.db.scheduled.schedule([...pushes(3, () => past(100), { jobId: 'held' }), ...pushes(2, () => new Date(Date.now() + 60_000), { jobId: 'held' }).map((p, i) => ({ ...p, push: { ...p.push, pushId: derivePushId('held', `later-${i}`) } }))]);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let holding!: () => void;
    const held = new Promise<void>((r) => (holding = r));
    // A descheduler's batch: the due three are claimed, and its publish's confirms do not come (a blocked broker).
    const batch = other.scheduled.withDueBatch('apns', new Date(), 10, async () => {
      holding();
      await gate;
    });
    await held;
    // Another descheduler's next due push is not one this batch holds (it would spin on them).
    expect((await t.db.scheduled.nextDueAt('apns'))?.getTime()).toBeGreaterThan(Date.now());
    await t.db.jobs.accept([{ id: 'held', app: 'demo', team: null }]); // the API recorded it
    const started = Date.now();
    // The two not due go; the three the batch holds are left to it: the job is marked cancelled, so the pushers drop them.
    expect(await cancelJobFully(t.db, 'held')).toEqual({ known: true, fanout: false, scheduled: 2, alreadyDone: false });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect((await t.db.kysely.selectFrom('jobs').select('cancelled_at').where('id', '=', 'held').executeTakeFirstOrThrow()).cancelled_at).not.toBeNull();
    open();
    expect(await batch).toBe(3);
  });

  it("a cancel removes the push a descheduler is reading as its next due one (the job read 'cancelling' until that push fell due)", async () => {
    await clear();
    await t.db.apps.upsert({ id: 'demo' });
    await t.db.scheduled.schedule(pushes(1, () => new Date(Date.now() + 60_000), { jobId: 'next-due' }));
    await t.db.jobs.accept([{ id: 'next-due', app: 'demo', team: null }]);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let reading!: () => void;
    const read = new Promise<void>((r) => (reading = r));
    // A descheduler asks when its next push is due; held open here, so the cancel meets its row lock.
    const lookup = other.kysely.transaction().execute(async (trx) => {
      const next = await createScheduledPushRepository(trx, { url: t.url, schema: t.schema }).nextDueAt('apns');
      reading();
      await gate;
      return next;
    });
    await read;
    const cancel = cancelJobFully(t.db, 'next-due');
    setTimeout(open, 200);
    expect(await cancel).toEqual({ known: true, fanout: false, scheduled: 1, alreadyDone: false });
    expect(await lookup).toBeInstanceOf(Date);
    expect(await t.db.kysely.selectFrom('scheduled_pushes').select('push_id').where('job_id', '=', 'next-due').execute()).toEqual([]);
  });

  it("asks the user's opt-outs and mutes again when a push falls due: one made while it was stored keeps it from going out", async () => {
    await clear();
    await t.db.apps.upsert({ id: 'demo' });
    const [optedOut, muted, unmuted, other, old] = pushes(5, () => past(100), { jobId: 'digest' }) as [ScheduledPushInput, ScheduledPushInput, ScheduledPushInput, ScheduledPushInput, ScheduledPushInput];
    const about = { category: 'marketing', objectId: 'thread:42' };
    // `old` was stored before pushes remembered their category (migration 0025): released as before.
    await t.db.scheduled.schedule([{ ...optedOut, ...about }, { ...muted, ...about }, { ...unmuted, ...about }, { ...other, ...about }, old]);
    // While they wait: u0 opts out of marketing (in every app), u1 mutes the thread for a day, u2's mute has already ended, u4 opts out too.
    await t.db.preferences.setOptOut('u0', 'marketing', true);
    await t.db.preferences.setMute('u1', 'thread:42', new Date(Date.now() + 86_400_000), 'demo');
    await t.db.preferences.setMute('u2', 'thread:42', new Date(Date.now() - 1_000));
    await t.db.preferences.setOptOut('u4', 'marketing', true);
    await t.db.preferences.setOptOut('u3', 'other-category', true);
    const seen: string[] = [];
    expect(await t.db.scheduled.withDueBatch('apns', new Date(), 10, async (rows) => void seen.push(...rows.map((r) => r.pushId)))).toBe(5);
    expect(seen.sort()).toEqual([unmuted.push.pushId, other.push.pushId, old.push.pushId].sort());
    const outcomes = await t.db.kysely.selectFrom('push_outcomes').select(['push_id', 'outcome', 'reason', 'device_id']).where('job_id', '=', 'digest').execute();
    expect(outcomes.sort((a, b) => a.push_id.localeCompare(b.push_id))).toEqual(
      [
        { push_id: optedOut.push.pushId, outcome: 'opted-out', reason: "its user opted out of the job's category while it was scheduled", device_id: '0' },
        { push_id: muted.push.pushId, outcome: 'muted', reason: "its user muted the job's object while it was scheduled", device_id: '1' },
      ].sort((a, b) => a.push_id.localeCompare(b.push_id)),
    );
  });

  it("asks a device-addressed push's preferences of whoever holds the device when it falls due, not of whom it was stored for", async () => {
    await clear();
    await t.db.apps.upsert({ id: 'demo' });
    // A broadcast stored for 09:00 reaches u-a's tablet; overnight u-b signs in on it, and u-b has opted out of promotions.
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'demo', platform: 'apns', token: 'ab'.repeat(32), userId: 'u-a', eventAt: new Date(Date.now() - 60_000).toISOString() });
    const tablet = await t.db.kysely.selectFrom('devices').select('id').where('token', '=', 'ab'.repeat(32)).executeTakeFirstOrThrow();
    const [broadcast, toUser] = pushes(2, () => past(100), { jobId: 'morning' }) as [ScheduledPushInput, ScheduledPushInput];
    const about = { category: 'promotions' };
    await t.db.scheduled.schedule([
      { ...broadcast, ...about, push: { ...broadcast.push, deviceId: String(tablet.id), userId: 'u-a', toDevice: true } },
      { ...toUser, ...about, push: { ...toUser.push, userId: 'u-a' } },
    ]);
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'demo', platform: 'apns', token: 'ab'.repeat(32), userId: 'u-b', eventAt: new Date().toISOString() });
    await t.db.preferences.setOptOut('u-b', 'promotions', true);
    const seen: string[] = [];
    expect(await t.db.scheduled.withDueBatch('apns', new Date(), 10, async (rows) => void seen.push(...rows.map((r) => r.pushId)))).toBe(2);
    // The push for u-a's own devices is released (the pusher drops it there as reassigned); the broadcast is u-b's now.
    expect(seen).toEqual([toUser.push.pushId]);
    const outcomes = await t.db.kysely.selectFrom('push_outcomes').select(['push_id', 'outcome']).where('job_id', '=', 'morning').execute();
    expect(outcomes).toEqual([{ push_id: broadcast.push.pushId, outcome: 'opted-out' }]);
  });

  it('asks an audience job\'s push when it falls due whether its user is still in the audience: one who left the topic or unfollowed since gets nothing', async () => {
    await clear();
    await t.db.apps.upsert({ id: 'demo' });
    const db = t.db.kysely;
    const at = new Date();
    const fanout = (jobId: string, audience: object) =>
      sql`insert into fanouts (job_id, app, audience, job, accepted_at) values (${jobId}, 'demo', ${JSON.stringify(audience)}::jsonb, ${JSON.stringify({ id: jobId })}::jsonb, ${at.toISOString()}::timestamptz)`.execute(db);
    await fanout('xmas-promo', { topic: 'xmas' });
    await fanout('star-news', { followersOf: 'star' });
    await fanout('everyone', { broadcast: true });
    await db.insertInto('topics').values({ app: 'demo', name: 'xmas' }).execute();
    const member = (kind: 'user' | 'device', id: string, subscribed: boolean) => ({ app: 'demo', topic: 'xmas', member_kind: kind, member_id: id, subscribed, event_at: at });
    // u0 unsubscribed since; u1 is still subscribed; u2's device is a member itself; u3's device left and u3 never was one
    // (their pushes name no devices row: the holder asked is the user they were stored for).
    await db.insertInto('topic_members').values([member('user', 'u0', false), member('user', 'u1', true), member('device', 'apns:token-2', true), member('device', 'apns:token-3', false)]).execute();
    await db.insertInto('follows').values([{ app: 'demo', followee: 'star', follower: 'u0', following: true, event_at: at }, { app: 'demo', followee: 'star', follower: 'u1', following: false, event_at: at }]).execute();
    // A tablet reached as a device of u-old (no member), handed since to u1, a subscribed member: asked of its holder now.
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'demo', platform: 'apns', token: 'cd'.repeat(32), userId: 'u1', eventAt: at.toISOString() });
    const tablet = await db.selectFrom('devices').select('id').where('token', '=', 'cd'.repeat(32)).executeTakeFirstOrThrow();
    const topic = pushes(5, () => past(100), { jobId: 'xmas-promo' });
    const handed = { ...(topic[4] as ScheduledPushInput), push: { ...(topic[4] as ScheduledPushInput).push, deviceId: String(tablet.id), token: 'cd'.repeat(32), userId: 'u-old', toDevice: true as const } };
    const followers = pushes(2, () => past(100), { jobId: 'star-news' });
    const broadcast = pushes(1, () => past(100), { jobId: 'everyone' });
    const toUsers = pushes(1, () => past(100), { jobId: 'plain' });
    await t.db.scheduled.schedule([...topic.slice(0, 4).map((p, i) => (i >= 2 ? { ...p, push: { ...p.push, deviceId: `no-row-${i}`, toDevice: true as const } } : p)), handed, ...followers, ...broadcast, ...toUsers]);
    const seen: string[] = [];
    let skipped: SkippedCounts = {};
    expect(await t.db.scheduled.withDueBatch('apns', new Date(), 20, async (rows) => void seen.push(...rows.map((r) => r.pushId)), (s) => (skipped = s))).toBe(9);
    const id = (list: ScheduledPushInput[], i: number) => (list[i] as ScheduledPushInput).push.pushId;
    expect(seen.sort()).toEqual([id(topic, 1), id(topic, 2), id(topic, 4), id(followers, 0), id(broadcast, 0), id(toUsers, 0)].sort());
    // What herald_descheduler_pushes_total{outcome="left-audience"} counts.
    expect(skipped).toEqual({ 'left-audience': 3 });
    const outcomes = await db.selectFrom('push_outcomes').select(['push_id', 'outcome', 'code', 'reason']).where('job_id', 'in', ['xmas-promo', 'star-news']).execute();
    const left = { outcome: 'opted-out', code: 'left-audience', reason: "its user left the job's audience while it was scheduled (unsubscribed from its topic, or unfollowed)" };
    expect(outcomes.sort((a, b) => a.push_id.localeCompare(b.push_id))).toEqual(
      [{ push_id: id(topic, 0), ...left }, { push_id: id(topic, 3), ...left }, { push_id: id(followers, 1), ...left }].sort((a, b) => a.push_id.localeCompare(b.push_id)),
    );
  });

  it('never releases a push of a job cancelled after it was stored: deleted and recorded as cancelled instead', async () => {
    await clear();
    const late = pushes(3, () => past(1000), { jobId: 'cancelled-later' });
    const live = pushes(2, () => past(500));
    await t.db.scheduled.schedule([...late, ...live]);
    // The cancel landed first; a chunk already past its cancel check stored these afterwards.
    await t.db.kysely.insertInto('jobs').values({ id: 'cancelled-later', app: 'demo', published_at: new Date(), cancelled_at: new Date() }).execute();
    const seen: string[] = [];
    expect(await t.db.scheduled.withDueBatch('apns', new Date(), 10, async (rows) => void seen.push(...rows.map((r) => r.pushId)))).toBe(5);
    expect(seen).toEqual(live.map((p) => p.push.pushId));
    const outcomes = await t.db.kysely.selectFrom('push_outcomes').select(['push_id', 'outcome', 'device_id']).where('job_id', '=', 'cancelled-later').orderBy('push_id').execute();
    expect(outcomes).toEqual(late.map((p) => ({ push_id: p.push.pushId, outcome: 'cancelled', device_id: p.push.deviceId })).sort((a, b) => a.push_id.localeCompare(b.push_id)));
    expect(await t.db.scheduled.nextDueAt('apns')).toBeUndefined();
  });

  it('a store that meets a cancel in progress waits for it, then records the pushes cancelled instead of storing them', async () => {
    await clear();
    const jobId = 'cancel-in-progress';
    await t.db.kysely.insertInto('jobs').values({ id: jobId, app: 'demo', published_at: new Date() }).execute();
    const batch = pushes(3, () => new Date(Date.now() + 60_000), { jobId });
    let storing: Promise<number> = Promise.resolve(-1);
    // The cancel has marked the job and not committed yet (cancel-job.ts: its removal of stored pushes comes after).
    await other.kysely.transaction().execute(async (trx) => {
      await trx.updateTable('jobs').set({ cancelled_at: new Date() }).where('id', '=', jobId).execute();
      storing = t.db.scheduled.schedule(batch);
      const first = await Promise.race([storing.then(() => 'stored'), new Promise((r) => setTimeout(() => r('waiting'), 300))]);
      expect(first).toBe('waiting');
    });
    // Stored now, they would be committed after the cancel and missed by its removal.
    expect(await storing).toBe(0);
    expect(await t.db.kysely.selectFrom('scheduled_pushes').select('push_id').where('job_id', '=', jobId).execute()).toEqual([]);
    const outcomes = await t.db.kysely.selectFrom('push_outcomes').select(['push_id', 'outcome', 'code', 'platform', 'device_id']).where('job_id', '=', jobId).orderBy('push_id').execute();
    expect(outcomes).toEqual(
      batch.map((p) => ({ push_id: p.push.pushId, outcome: 'cancelled', code: 'cancelled', platform: 'apns', device_id: p.push.deviceId })).sort((a, b) => a.push_id.localeCompare(b.push_id)),
    );
  });

  it('counts stored pushes per platform per upcoming hour, overdue ones in the first hour', async () => {
    await clear();
    const now = new Date('2030-01-01T10:15:00Z');
    const h = (iso: string) => () => new Date(iso);
    await t.db.scheduled.schedule([
      ...pushes(2, h('2030-01-01T09:00:00Z')),
      ...pushes(3, h('2030-01-01T10:59:00Z')),
      ...pushes(4, h('2030-01-01T12:30:00Z')),
      ...pushes(1, h('2030-01-01T12:30:00Z'), { platform: 'fcm' }),
      ...pushes(7, h('2030-01-02T12:30:00Z')),
    ]);
    expect(await t.db.scheduled.countsByHour(undefined, 24, now)).toEqual([
      { platform: 'apns', hour: new Date('2030-01-01T10:00:00Z'), count: 5 },
      { platform: 'apns', hour: new Date('2030-01-01T12:00:00Z'), count: 4 },
      { platform: 'fcm', hour: new Date('2030-01-01T12:00:00Z'), count: 1 },
    ]);
    expect(await t.db.scheduled.countsByHour('fcm', 24, now)).toEqual([{ platform: 'fcm', hour: new Date('2030-01-01T12:00:00Z'), count: 1 }]);
  });

  it('tells listeners of the platform when pushes are scheduled, with the earliest due time', async () => {
    await clear();
    const heard: Date[] = [];
    const listener = await other.scheduled.listen('fcm', (d) => heard.push(d));
    try {
      const dueAt = new Date(Date.now() + 3_600_000);
      await t.db.scheduled.schedule([...pushes(2, () => new Date(dueAt.getTime() + 5000), { platform: 'fcm' }), ...pushes(1, () => dueAt, { platform: 'fcm' })]);
      await t.db.scheduled.schedule(pushes(1, () => dueAt, { platform: 'apns' }));
      const deadline = Date.now() + 5000;
      while (heard.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 100));
      expect(heard).toEqual([dueAt]);
    } finally {
      await listener.close();
    }
  });
});
