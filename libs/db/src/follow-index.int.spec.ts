import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Registration } from '@herald/contracts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { applyFollowEvents, followerCount } from './follow-edges.ts';
import { segmentSql } from './segment-sql.ts';

const OPTS = { cap: 20, min: 10, maxAgeMs: 3_600_000 };
const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 0, minute)).toISOString();
const reg = (i: number, lastSeenAt: string, extra: Partial<Extract<Registration, { kind: 'register' }>> = {}): Registration => ({
  version: 1, kind: 'register', app: 'app-f', platform: 'fcm', token: `t-${i}`, userId: `u-${i}`, lastSeenAt, eventAt: lastSeenAt, ...extra,
});
const follow = (i: number, following: boolean, eventAt = at(100)) => ({ app: 'app-f', followee: 'star', follower: `u-${i}`, following, eventAt });

let t: SpecDatabase;
const index = async () =>
  (await sql<{ follower: string }>`select follower from follower_recent where app = 'app-f' and followee = 'star' order by active_at desc nulls last, follower`.execute(t.db.kysely)).rows.map((r) => r.follower);

beforeAll(async () => {
  t = await createSpecDatabase('follows');
  await t.db.apps.upsert({ id: 'app-f' });
  // u-i was last seen at minute i: u-49 is the most recently active.
  await t.db.devices.applyRegistrations(Array.from({ length: 50 }, (_, i) => reg(i, at(i))));
});
afterAll(async () => t?.drop());

describe('the capped recently-active follower index', () => {
  it('keeps at most cap followers, the most recently active, and an exact follower count', async () => {
    await applyFollowEvents(t.db.kysely, Array.from({ length: 50 }, (_, i) => follow(i, true)), OPTS);
    expect(await followerCount(t.db.kysely, 'app-f', 'star')).toBe(50);
    expect(await index()).toEqual(Array.from({ length: 20 }, (_, k) => `u-${49 - k}`));
  });

  it('moves a follower forward when one of their devices is seen again', async () => {
    await t.db.devices.applyRegistrations([reg(45, at(500), { token: 't-45b' })]);
    expect((await index())[0]).toBe('u-45');
  });

  it("writes a follower's index rows again only once their activity moved by an hour (each app launch registers)", async () => {
    const activeAt = async () => (await sql<{ active_at: Date }>`select active_at from follower_recent where app = 'app-f' and followee = 'star' and follower = 'u-45'`.execute(t.db.kysely)).rows[0]?.active_at.toISOString();
    expect(await activeAt()).toBe(at(500));
    await t.db.devices.applyRegistrations([reg(45, at(550), { token: 't-45b' })]);
    expect(await activeAt()).toBe(at(500));
    await t.db.devices.applyRegistrations([reg(45, at(561), { token: 't-45b' })]);
    expect(await activeAt()).toBe(at(561));
  });

  it('refills from follows and device activity when unfollows shrink it below its minimum', async () => {
    await applyFollowEvents(t.db.kysely, Array.from({ length: 11 }, (_, k) => follow(49 - k, false, at(200))), OPTS);
    expect(await followerCount(t.db.kysely, 'app-f', 'star')).toBe(39);
    // 20 - 11 = 9 < min 10: refilled with the 20 most recently active of the 39 who still follow.
    expect(await index()).toEqual(Array.from({ length: 20 }, (_, k) => `u-${38 - k}`));
  });

  it('takes back a follower it trimmed once every follower fits again', async () => {
    // 39 follow, the index holds the 20 most recent (u-38 … u-19). u-0 … u-17 unfollow: 21 follow, u-18 still trimmed out.
    await applyFollowEvents(t.db.kysely, Array.from({ length: 18 }, (_, i) => follow(i, false, at(300))), OPTS);
    expect(await index()).toEqual(Array.from({ length: 20 }, (_, k) => `u-${38 - k}`));
    // u-38 unfollows: 20 follow, all of whom fit. Before, the index kept 19 (above its minimum) and u-18 stayed out for good.
    const refilledAt = async () => (await sql<{ at: Date | null }>`select recent_refilled_at as at from followees where app = 'app-f' and followee = 'star'`.execute(t.db.kysely)).rows[0]?.at;
    const before = await refilledAt();
    await applyFollowEvents(t.db.kysely, [follow(38, false, at(301))], OPTS);
    // Topped up, not rebuilt (a rebuild stamps its time).
    expect(await refilledAt()).toEqual(before);
    expect(await followerCount(t.db.kysely, 'app-f', 'star')).toBe(20);
    expect(await index()).toEqual(Array.from({ length: 20 }, (_, k) => `u-${37 - k}`));
  });
});

describe('a follow and an unfollow of one edge at once', () => {
  // Two registrars (or API processes) apply them together. Before, the follow's index entry was
  // written after its edge committed: it could land after the unfollow had cleared the index, and
  // the unfollower stayed in it for good (jobs to the most recently active followers reached them).
  it('leaves the unfollower out of the index whatever the interleaving', async () => {
    const edge = { app: 'app-f', followee: 'racer', follower: 'u-7' };
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holderXid = '';
    const holderStarted = new Promise<void>((resolve) => {
      // A third transaction holds the index row the follow is about to write, so the follow stops
      // there, between its edge and its index entry, while the unfollow runs.
      void t.db.kysely
        .transaction()
        .execute(async (tx) => {
          holderXid = (await sql<{ xid: string }>`select pg_current_xact_id()::text as xid`.execute(tx)).rows[0]?.xid ?? '';
          await sql`insert into follower_recent (app, followee, follower, active_at) values (${edge.app}, ${edge.followee}, ${edge.follower}, null)`.execute(tx);
          resolve();
          await held;
          throw new Error('rolled back');
        })
        .catch(() => undefined);
    });
    await holderStarted;
    const followed = applyFollowEvents(t.db.kysely, [{ ...edge, following: true, eventAt: at(300) }], OPTS);
    for (let i = 0; i < 200; i += 1) {
      const { rows } = await sql<{ n: string }>`select count(*) as n from pg_locks where locktype = 'transactionid' and transactionid::text = ${holderXid} and not granted`.execute(t.db.kysely);
      if (Number(rows[0]?.n) > 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const unfollowed = applyFollowEvents(t.db.kysely, [{ ...edge, following: false, eventAt: at(301) }], OPTS);
    await new Promise((r) => setTimeout(r, 300));
    release();
    expect(await Promise.all([followed, unfollowed])).toEqual([['applied'], ['applied']]);
    const entries = await sql`select 1 from follower_recent where app = ${edge.app} and followee = ${edge.followee} and follower = ${edge.follower}`.execute(t.db.kysely);
    expect(entries.rows).toEqual([]);
    expect(await followerCount(t.db.kysely, 'app-f', 'racer')).toBe(0);
  });
});

describe('registration attributes and segment SQL', () => {
  it('stores appVersion with its numeric parts, and lastSeenAt (default: the event time)', async () => {
    await t.db.devices.applyRegistrations([
      reg(90, at(1), { appVersion: '5.10.0-rc1' }),
      { version: 1, kind: 'register', app: 'app-f', platform: 'fcm', token: 't-91', userId: 'u-91', appVersion: '5.9', eventAt: at(7) },
    ]);
    const rows = await t.db.kysely.selectFrom('devices').select(['token', 'app_version', 'app_version_parts', 'last_seen_at']).where('token', 'in', ['t-90', 't-91']).orderBy('token').execute();
    expect(rows).toEqual([
      { token: 't-90', app_version: '5.10.0-rc1', app_version_parts: [5, 10], last_seen_at: new Date(at(1)) },
      { token: 't-91', app_version: '5.9', app_version_parts: [5, 9], last_seen_at: new Date(at(7)) },
    ]);
  });

  it('sends every value as a parameter, never inside the SQL text', async () => {
    const q = sql`select count(*) from devices d where ${segmentSql({ kind: 'compare', field: 'locale', op: '=', value: "x' or '1'='1" }, new Date())}`.compile(t.db.kysely);
    expect(q.sql).not.toContain("'1'='1");
    expect(q.parameters).toContain("x' or '1'='1");
    const { rows } = await sql<{ count: string }>`select count(*) from devices d where ${segmentSql({ kind: 'compare', field: 'locale', op: '=', value: "x' or '1'='1" }, new Date())}`.execute(t.db.kysely);
    expect(rows[0]?.count).toBe('0');
  });
});
