import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { derivePushId, type DevicePush, type Registration } from '@herald/contracts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import type { HeraldTables } from './tables.ts';
import { applyFollowEvents, followerCount } from './follow-edges.ts';
import { applyTopicMemberships, createTopic, findTopic } from './topic-store.ts';
import { eraseEveryAppPreferences, eraseUser, erasureKey } from './user-erasure.ts';
import { deleteTopic } from './topic-deletion.ts';
import { toJobStatus } from './job-status-view.ts';

const OPTS = { cap: 3, min: 2, maxAgeMs: 3_600_000 };
const past = (minute: number) => new Date(Date.now() - 3_600_000 + minute * 60_000).toISOString();
const hex = (n: number) => n.toString(16).padStart(64, '0');
const register = (app: string, userId: string, token: string, eventAt: string, extra: Partial<Extract<Registration, { kind: 'register' }>> = {}): Registration => ({
  version: 1, kind: 'register', app, platform: 'apns', token, userId, eventAt, timezone: 'Europe/Berlin', locale: 'de-DE', appVersion: '5.2.1', lastSeenAt: eventAt, ...extra,
});
const stored = (app: string, userId: string, token: string) => {
  const jobId = randomUUID();
  const push: DevicePush = { version: 1, pushId: derivePushId(jobId, token), jobId, deviceId: '1', app, platform: 'apns', token, userId, content: { title: `for ${userId}` } } as DevicePush;
  return { dueAt: new Date(Date.now() + 86_400_000), push };
};

let t: SpecDatabase;
/** A device of the user inserted on `conn` (inside its open transaction): how many rows it wrote. */
const insertDeviceOn = async (conn: Kysely<HeraldTables>, app: string, userId: string, token: string): Promise<number> => {
  const { numAffectedRows } = await sql`insert into devices (app, platform, token, user_id, registered_at, last_event_at) values (${app}, 'apns', ${token}, ${userId}, now(), now())`.execute(conn);
  return Number(numAffectedRows ?? 0);
};
const devicesOf = async (app: string) =>
  (await sql<{ token: string; user_id: string | null; timezone: string | null; locale: string | null; app_version: string | null; last_seen_at: Date | null; invalidation_reason: string | null }>`
    select token, user_id, timezone, locale, app_version, last_seen_at, invalidation_reason from devices where app = ${app} order by token`.execute(t.db.kysely)).rows;
const rowsNaming = async (userId: string) =>
  (await sql<{ n: string }>`
    select (select count(*) from devices where user_id = ${userId}) + (select count(*) from topic_members where member_id = ${userId})
      + (select count(*) from follows where follower = ${userId} or followee = ${userId}) + (select count(*) from follower_recent where follower = ${userId} or followee = ${userId})
      + (select count(*) from followees where followee = ${userId}) + (select count(*) from opt_outs where user_id = ${userId} and app is not null)
      + (select count(*) from mutes where user_id = ${userId} and app is not null) + (select count(*) from scheduled_pushes where payload->>'userId' = ${userId}) as n`.execute(t.db.kysely)).rows[0]?.n;

beforeAll(async () => {
  t = await createSpecDatabase('erasure');
  for (const id of ['app-e', 'app-other']) await t.db.apps.upsert({ id });
  await createTopic(t.db.kysely, 'app-e', 'news');
  // alice: two phones (one logged out since), web keys none; bob: one phone. alice of app-other: her own.
  await t.db.devices.applyRegistrations([
    register('app-e', 'alice', hex(1), past(1)),
    register('app-e', 'alice', hex(2), past(2)),
    register('app-e', 'bob', hex(3), past(3)),
    register('app-other', 'alice', hex(4), past(4)),
  ]);
  await t.db.devices.applyRegistrations([{ version: 1, kind: 'unregister', app: 'app-e', platform: 'apns', token: hex(2), userId: 'alice', eventAt: past(5) }]);
  await applyTopicMemberships(t.db.kysely, [
    { app: 'app-e', topic: 'news', member: { userId: 'alice' }, subscribed: true, eventAt: past(6) },
    { app: 'app-e', topic: 'news', member: { platform: 'apns', token: hex(1) }, subscribed: true, eventAt: past(6) },
    { app: 'app-e', topic: 'news', member: { userId: 'bob' }, subscribed: true, eventAt: past(6) },
  ]);
  // alice follows bob and carol; bob, carol and dave follow alice; dave follows bob.
  await applyFollowEvents(
    t.db.kysely,
    [
      ['alice', 'bob'], ['alice', 'carol'], ['bob', 'alice'], ['carol', 'alice'], ['dave', 'alice'], ['dave', 'bob'],
    ].map(([follower, followee]) => ({ app: 'app-e', follower: follower as string, followee: followee as string, following: true, eventAt: past(7) })),
    OPTS,
  );
  for (const app of ['app-e', 'app-other', null]) {
    await t.db.preferences.addOptOut('alice', 'news', app);
    await t.db.preferences.setMute('alice', 'thread-1', null, app);
  }
  await t.db.preferences.addOptOut('bob', 'news', 'app-e');
  await t.db.scheduled.schedule([stored('app-e', 'alice', hex(1)), stored('app-e', 'bob', hex(3)), stored('app-other', 'alice', hex(4))]);
});
afterAll(async () => t?.drop());

describe("erasing a user of an app", () => {
  // Before, the stored pushes were deleted without an outcome: the job read `sending` with them in flight for good.
  it("records the user's stored pushes as invalid (user-erased) with their job, which then adds up and ends done", async () => {
    const jobId = randomUUID();
    const pushFor = (userId: string, token: string, deviceId: string): DevicePush =>
      ({ version: 1, pushId: derivePushId(jobId, token), jobId, deviceId, app: 'app-status', platform: 'apns', token, userId, content: { title: 'later' } }) as DevicePush;
    await t.db.apps.upsert({ id: 'app-status' });
    await t.db.jobs.recordDemux([{ id: jobId, app: 'app-status', targeted: 2, outcome: 'fanned-out' }]);
    const tomorrow = new Date(Date.now() + 86_400_000);
    await t.db.scheduled.schedule([{ dueAt: tomorrow, push: pushFor('erin', hex(20), '20') }, { dueAt: tomorrow, push: pushFor('frank', hex(21), '21') }]);
    expect(await eraseUser(t.db.kysely, 'app-status', 'erin')).toMatchObject({ storedPushes: 1 });
    const statusOf = async () => {
      const record = await t.db.jobs.status(jobId);
      if (record === undefined) throw new Error(`no job ${jobId}`);
      return toJobStatus(record);
    };
    expect(await statusOf()).toMatchObject({ targeted: 2, invalid: 1, scheduled: 1, inFlight: 1 });
    const pushes = (await t.db.jobs.pushes(jobId, { limit: 10 })).map((p) => [p.deviceId, p.outcome, p.code]);
    expect(pushes.sort()).toEqual([['20', 'invalid', 'user-erased'], ['21', 'scheduled', null]]);
    // frank's is cancelled: nothing left in flight, the job ends (it read cancelling for good before).
    expect(await t.db.scheduled.cancelJob(jobId)).toBe(1);
    expect(await statusOf()).toMatchObject({ inFlight: 0, scheduled: 0 });
  });

  it("removes every row naming the user in that app, keeps other users' and other apps', and counts what it did", async () => {
    const e = await eraseUser(t.db.kysely, 'app-e', 'alice');
    expect(e).toMatchObject({ app: 'app-e', devices: 2, topicMemberships: 2, follows: 5, optOuts: 1, mutes: 1, storedPushes: 1, keptEveryAppOptOuts: 1, keptEveryAppMutes: 1 });
    // Her devices are tombstones: no user, no attribute; the live one unregistered at the erasure.
    expect(await devicesOf('app-e')).toEqual([
      { token: hex(1), user_id: null, timezone: null, locale: null, app_version: null, last_seen_at: null, invalidation_reason: 'unregistered' },
      { token: hex(2), user_id: null, timezone: null, locale: null, app_version: null, last_seen_at: null, invalidation_reason: 'unregistered' },
      expect.objectContaining({ token: hex(3), user_id: 'bob', timezone: 'Europe/Berlin', invalidation_reason: null }),
    ]);
    // Nothing of app-e names her (her device's membership stays, unsubscribed, under its token); in app-other she is as she was (one device, an opt-out, a mute, a stored push), and so are every-app preferences.
    expect(
      (await sql<{ n: string }>`
        select (select count(*) from devices where app = 'app-e' and user_id = 'alice') + (select count(*) from topic_members where app = 'app-e' and (member_id = 'alice' or (member_id = ${`apns:${hex(1)}`} and subscribed)))
          + (select count(*) from follows where app = 'app-e' and 'alice' in (follower, followee)) + (select count(*) from follower_recent where app = 'app-e' and 'alice' in (follower, followee))
          + (select count(*) from followees where app = 'app-e' and followee = 'alice') + (select count(*) from opt_outs where app = 'app-e' and user_id = 'alice')
          + (select count(*) from mutes where app = 'app-e' and user_id = 'alice') + (select count(*) from scheduled_pushes where payload->>'app' = 'app-e' and payload->>'userId' = 'alice') as n`.execute(t.db.kysely)).rows[0]?.n,
    ).toBe('0');
    expect(await rowsNaming('alice')).toBe('4');
    // bob: his device, membership, dave's edge to him and its index entry, his followees row, his opt-out, his stored push.
    expect(await rowsNaming('bob')).toBe('7');
  });

  it('keeps the counts others read right: the topic has one subscriber, bob one follower, carol none, and bob\'s index holds dave', async () => {
    expect((await findTopic(t.db.kysely, 'app-e', 'news'))?.subscribers).toBe(1);
    expect(await followerCount(t.db.kysely, 'app-e', 'bob')).toBe(1);
    expect(await followerCount(t.db.kysely, 'app-e', 'carol')).toBe(0);
    const index = await sql<{ follower: string }>`select follower from follower_recent where app = 'app-e' and followee = 'bob'`.execute(t.db.kysely);
    expect(index.rows.map((r) => r.follower)).toEqual(['dave']);
  });

  it('records the erasure under a digest of the app and user, not the user id', async () => {
    const rows = await sql<{ user_key: Buffer }>`select user_key from user_erasures where app = 'app-e'`.execute(t.db.kysely);
    expect(rows.rows.map((r) => r.user_key.toString('hex'))).toEqual([erasureKey('app-e', 'alice').toString('hex')]);
  });

  it("refuses, from every writer, a subscribe, follow or register of hers stamped before the erasure; her device's membership stays unsubscribed", async () => {
    const before = past(40);
    expect(await t.db.devices.applyRegistrations([register('app-e', 'alice', hex(9), before)])).toEqual(['stale']);
    expect(
      await applyTopicMemberships(t.db.kysely, [
        { app: 'app-e', topic: 'news', member: { userId: 'alice' }, subscribed: true, eventAt: before },
        { app: 'app-e', topic: 'news', member: { platform: 'apns', token: hex(1) }, subscribed: true, eventAt: before },
      ]),
    ).toEqual(['stale', 'stale']);
    expect(await applyFollowEvents(t.db.kysely, [{ app: 'app-e', follower: 'dave', followee: 'alice', following: true, eventAt: before }], OPTS)).toEqual(['stale']);
    expect(await rowsNaming('alice')).toBe('4');
    expect((await findTopic(t.db.kysely, 'app-e', 'news'))?.subscribers).toBe(1);
  });

  it('an erasure waits for a write of the app under way, then erases what it wrote', async () => {
    await t.db.kysely.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      // erin registers, not yet committed, when her erasure is asked for.
      expect(await insertDeviceOn(conn, 'app-e', 'erin', hex(20))).toBe(1);
      const erasure = eraseUser(t.db.kysely, 'app-e', 'erin');
      await new Promise((r) => setTimeout(r, 200));
      await sql`commit`.execute(conn);
      expect(await erasure).toMatchObject({ devices: 1 });
    });
    expect(await rowsNaming('erin')).toBe('0');
  });

  it("a register of one of her tokens from before the erasure, delivered after it, is stale; a new login after it applies", async () => {
    // hex(1) was live; hex(2) logged out at minute 5, so only the erasure's time makes a register of minute 30 stale.
    expect(await t.db.devices.applyRegistrations([register('app-e', 'alice', hex(1), past(30)), register('app-e', 'alice', hex(2), past(30))])).toEqual(['stale', 'stale']);
    expect((await devicesOf('app-e')).filter((d) => [hex(1), hex(2), hex(3)].includes(d.token)).map((d) => d.user_id)).toEqual([null, null, 'bob']);
    expect(await t.db.devices.applyRegistrations([register('app-e', 'carol', hex(1), new Date(Date.now() + 1_000).toISOString())])).toEqual(['applied']);
  });

  // Before, erased_at was the erasure's clock only: a register stamped after it by a fast phone clock, applied before the erasure, passed the guard when delivered again and brought the user back.
  it('a register stamped ahead by a fast clock, applied before the erasure and delivered again after it, is stale', async () => {
    const ahead = register('app-e', 'ivy', hex(50), new Date(Date.now() + 60_000).toISOString());
    expect(await t.db.devices.applyRegistrations([ahead])).toEqual(['applied']);
    const erased = await eraseUser(t.db.kysely, 'app-e', 'ivy');
    expect(erased).toMatchObject({ devices: 1 });
    // The erasure's time is the clock's, not the event's a minute ahead.
    expect(Math.abs(erased.erasedAt.getTime() - Date.now())).toBeLessThan(10_000);
    expect(await t.db.devices.applyRegistrations([ahead])).toEqual(['stale']);
    expect(await rowsNaming('ivy')).toBe('0');
  });

  // A phone a day fast must not keep the user's new sign-up out for a day: the cover is capped at the clock plus the skew allowance (5 min).
  it("covers a stamp no further ahead than the skew allowance: the user's sign-up after it applies", async () => {
    const dayAhead = register('app-e', 'lou', hex(51), new Date(Date.now() + 86_400_000).toISOString());
    expect(await t.db.devices.applyRegistrations([dayAhead])).toEqual(['applied']);
    await eraseUser(t.db.kysely, 'app-e', 'lou');
    const { rows } = await sql<{ ahead_ms: number }>`select extract(epoch from erased_at - now()) * 1000 as ahead_ms from user_erasures where user_key = ${erasureKey('app-e', 'lou')}`.execute(t.db.kysely);
    expect(Number(rows[0]?.ahead_ms)).toBeGreaterThan(4 * 60_000);
    expect(Number(rows[0]?.ahead_ms)).toBeLessThanOrEqual(5 * 60_000);
    expect(await t.db.devices.applyRegistrations([register('app-e', 'lou', hex(52), new Date(Date.now() + 6 * 60_000).toISOString())])).toEqual(['applied']);
    // The register a day ahead, delivered again, stays out all the same (its tombstone's mark), and lou's new phone is lou's.
    expect(await t.db.devices.applyRegistrations([dayAhead])).toEqual(['stale']);
    expect((await devicesOf('app-e')).filter((d) => [hex(51), hex(52)].includes(d.token)).map((d) => d.user_id)).toEqual([null, 'lou']);
  });

  // Before, the erasure moved the tombstones' last event to its own time: another user's login on the phone from before it was stale.
  it("another user's login on her phone from before the erasure, delivered after it, applies (whether she had logged out of it or not)", async () => {
    await t.db.devices.applyRegistrations([register('app-e', 'jo', hex(60), past(10)), register('app-e', 'jo', hex(61), past(10))]);
    await t.db.devices.applyRegistrations([{ version: 1, kind: 'unregister', app: 'app-e', platform: 'apns', token: hex(60), userId: 'jo', eventAt: past(12) }]);
    // kim signs in on both phones at minute 30; his registers wait in a backlog while jo is erased.
    await eraseUser(t.db.kysely, 'app-e', 'jo');
    expect(await t.db.devices.applyRegistrations([register('app-e', 'kim', hex(60), past(30)), register('app-e', 'kim', hex(61), past(30))])).toEqual(['applied', 'applied']);
    expect((await devicesOf('app-e')).filter((d) => [hex(60), hex(61)].includes(d.token)).map((d) => [d.user_id, d.invalidation_reason])).toEqual([
      ['kim', null],
      ['kim', null],
    ]);
    // jo's own register from before the erasure stays out.
    expect(await t.db.devices.applyRegistrations([register('app-e', 'jo', hex(62), past(40))])).toEqual(['stale']);
  });

  it('an erasure waiting for the app\'s writes does not deadlock with an unregister of the user\'s device that comes meanwhile', async () => {
    await t.db.devices.applyRegistrations([register('app-e', 'fay', hex(30), past(50))]);
    await t.db.kysely.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      // Another user's register holds the app's lock; fay's erasure queues behind it, and her logout behind that.
      expect(await insertDeviceOn(conn, 'app-e', 'gus', hex(31))).toBe(1);
      const erasure = eraseUser(t.db.kysely, 'app-e', 'fay');
      await new Promise((r) => setTimeout(r, 100));
      const logout = t.db.devices.applyRegistrations([{ version: 1, kind: 'unregister', app: 'app-e', platform: 'apns', token: hex(30), userId: 'fay', eventAt: past(55) }]);
      await new Promise((r) => setTimeout(r, 100));
      await sql`commit`.execute(conn);
      expect(await erasure).toMatchObject({ devices: 1 });
      expect(await logout).toHaveLength(1);
    });
    expect(await rowsNaming('fay')).toBe('0');
  });

  it("keeps an erased user out whatever the writer's search_path (the triggers' functions carry their schema)", async () => {
    await t.db.kysely.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      await sql`set local search_path = ''`.execute(conn);
      const { numAffectedRows } = await sql`insert into ${sql.id(t.schema, 'devices')} (app, platform, token, user_id, registered_at, last_event_at) values ('app-e', 'apns', ${hex(32)}, 'alice', now(), now() - interval '1 hour')`.execute(conn);
      expect(Number(numAffectedRows)).toBe(0);
      await sql`commit`.execute(conn);
    });
  });

  it("lets the user's logout through while an erasure is recorded but not yet carried out (its second step failed): the device is unregistered, not left getting pushes", async () => {
    await t.db.devices.applyRegistrations([register('app-e', 'hal', hex(40), past(50))]);
    await sql`insert into user_erasures (app, user_key, erased_at) values ('app-e', ${erasureKey('app-e', 'hal')}, now())`.execute(t.db.kysely);
    expect(await t.db.devices.applyRegistrations([{ version: 1, kind: 'unregister', app: 'app-e', platform: 'apns', token: hex(40), userId: 'hal', eventAt: past(55) }])).toEqual(['applied']);
    expect((await devicesOf('app-e')).find((d) => d.token === hex(40))?.invalidation_reason).toBe('unregistered');
    // A register from before the erasure stays out all the same.
    expect(await t.db.devices.applyRegistrations([register('app-e', 'hal', hex(40), past(56))])).toEqual(['stale']);
  });

  // Before, a deleted topic's rows not yet removed (topic-deletion.ts) were counted as memberships erased.
  it("counts only memberships of topics there are; a deleted topic's rows left of the user and of her devices are deleted", async () => {
    await t.db.devices.applyRegistrations([register('app-e', 'mia', hex(70), past(20))]);
    for (const name of ['mia-kept', 'mia-gone']) {
      await createTopic(t.db.kysely, 'app-e', name);
      await applyTopicMemberships(t.db.kysely, [
        { app: 'app-e', topic: name, member: { userId: 'mia' }, subscribed: true, eventAt: past(21) },
        { app: 'app-e', topic: name, member: { platform: 'apns', token: hex(70) }, subscribed: true, eventAt: past(21) },
      ]);
    }
    expect(await deleteTopic(t.db.kysely, 'app-e', 'mia-gone')).toBe(true);
    expect(await eraseUser(t.db.kysely, 'app-e', 'mia')).toMatchObject({ devices: 1, topicMemberships: 2 });
    const { rows } = await sql<{ topic: string; member_kind: string; subscribed: boolean }>`
      select topic, member_kind, subscribed from topic_members where app = 'app-e' and topic like 'mia-%' order by topic, member_kind`.execute(t.db.kysely);
    expect(rows).toEqual([{ topic: 'mia-kept', member_kind: 'device', subscribed: false }]);
    expect((await findTopic(t.db.kysely, 'app-e', 'mia-kept'))?.subscribers).toBe(0);
  });

  it('erasing again finds nothing more; --all-apps removes the every-app preferences', async () => {
    const again = await eraseUser(t.db.kysely, 'app-e', 'alice');
    expect(again).toMatchObject({ devices: 0, topicMemberships: 0, follows: 0, optOuts: 0, mutes: 0, storedPushes: 0 });
    expect(await eraseEveryAppPreferences(t.db.kysely, 'alice')).toEqual({ optOuts: 1, mutes: 1 });
  });
});
