import { sql, type Kysely, type RawBuilder } from 'kysely';
import { MAX_MOST_RECENT } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';

/**
 * Flickr's capped recently-active follower index (follower_recent, migration 0020; see
 * docs/adr/0012-audience-data.md). Per followee it holds at most `cap` followers, most recently
 * active first, so "the most recently active N followers" and "followers active in the last D
 * days" read at most `cap` rows however many edges the followee has.
 *
 * Kept by: follow events (a new follower goes in, the index is trimmed back to `cap`), unfollow
 * events (the follower goes out; below `min` rows while there are more followers, it is refilled
 * from the source of truth; short of followers while every follower fits in `cap`, the missing
 * ones are added), device activity at registration (a follower's active_at moves
 * forward), and a refill at read time when a full index is older than `maxAgeMs` (followers
 * trimmed out who became active since come back then).
 */
export interface FollowerIndexOptions {
  cap: number;
  min: number;
  maxAgeMs: number;
}

/** The cap is the most a job may ask for (`mostRecent`, refused at the door beyond it). */
export const DEFAULT_FOLLOWER_INDEX: FollowerIndexOptions = { cap: MAX_MOST_RECENT, min: 5_000, maxAgeMs: 24 * 3_600_000 };

/** The newest last_seen_at of the user's active devices: the follower's activity. */
const activityOf = (app: unknown, user: unknown) => sql<Date | null>`(
  select max(d.last_seen_at) from devices d where d.app = ${app} and d.user_id = ${user} and d.invalidated_at is null)`;

/** A followee's followers as follower_recent rows, with their activity (the source of truth a refill or a top-up reads). */
const followerRows = (app: string, followee: string, also: RawBuilder<unknown> = sql`true`) => sql`
  select f.app, f.followee, f.follower, ${activityOf(sql.ref('f.app'), sql.ref('f.follower'))}
  from follows f where f.app = ${app} and f.followee = ${followee} and f.following and ${also}`;

/** Changes one followee's index under its followees row lock, which follow and unfollow events of it wait on. */
async function underFolloweeLock(db: Kysely<HeraldTables>, app: string, followee: string, change: (tx: Kysely<HeraldTables>) => Promise<void>): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await sql`select 1 from followees where app = ${app} and followee = ${followee} for update`.execute(tx);
    await change(tx);
  });
}

/** Rebuilds one followee's index from follows joined with the followers' device activity. */
export async function refillFollowerIndex(db: Kysely<HeraldTables>, app: string, followee: string, options = DEFAULT_FOLLOWER_INDEX): Promise<void> {
  await underFolloweeLock(db, app, followee, async (tx) => {
    await sql`delete from follower_recent where app = ${app} and followee = ${followee}`.execute(tx);
    await sql`
      insert into follower_recent (app, followee, follower, active_at)
      ${followerRows(app, followee)}
      order by 4 desc nulls last, f.follower
      limit ${options.cap}`.execute(tx);
    await sql`update followees set recent_refilled_at = now() where app = ${app} and followee = ${followee}`.execute(tx);
  });
}

type FollowEdge = { app: string; followee: string; follower: string; following: boolean };

/**
 * After follow edges changed: add new followers, drop unfollowers. Run in the transaction that
 * changed the edges, so the edges' locks are held until the index agrees with them: run after it,
 * a follow's insert could land after a concurrent unfollow of the same edge had deleted from the
 * index (and found nothing), leaving the unfollower in it for good.
 */
export async function applyToFollowerIndex(tx: Kysely<HeraldTables>, edges: readonly FollowEdge[]): Promise<void> {
  if (edges.length === 0) return;
  const col = <K extends keyof FollowEdge>(k: K) => edges.map((e) => e[k]);
  await sql`
    with e as (select * from unnest(${col('app')}::text[], ${col('followee')}::text[], ${col('follower')}::text[], ${col('following')}::boolean[])
      as e(app, followee, follower, following)),
    gone as (
      delete from follower_recent r using e
      where not e.following and r.app = e.app and r.followee = e.followee and r.follower = e.follower)
    insert into follower_recent (app, followee, follower, active_at)
    select e.app, e.followee, e.follower, ${activityOf(sql.ref('e.app'), sql.ref('e.follower'))} from e where e.following
    order by 1, 2, 3
    on conflict (app, followee, follower) do update set active_at = excluded.active_at`.execute(tx);
}

/**
 * After applyToFollowerIndex's transaction: trim an index beyond its cap; refill one below its
 * minimum; top up one that lacks followers while they all fit (a follower trimmed out while the
 * followee had more than `cap` stayed out for good once it had `cap` or fewer: the read-time
 * refresh is for full indexes, and activity moves only the followers an index holds). A top-up
 * reads at most `cap` edges and writes only the followers missing, so a followee whose count
 * hovers at the cap costs a read of its edges per unfollow, not a rebuild.
 */
export async function rebalanceFollowerIndex(db: Kysely<HeraldTables>, edges: readonly FollowEdge[], options = DEFAULT_FOLLOWER_INDEX): Promise<void> {
  if (edges.length === 0) return;
  const followees = [...new Map(edges.map((e) => [JSON.stringify([e.app, e.followee]), e])).values()];
  const { rows } = await sql<{ app: string; followee: string; follower_count: string; recent: string }>`
    select fe.app, fe.followee, fe.follower_count,
      (select count(*) from follower_recent r where r.app = fe.app and r.followee = fe.followee) as recent
    from followees fe
    join unnest(${followees.map((f) => f.app)}::text[], ${followees.map((f) => f.followee)}::text[]) as x(app, followee)
      on fe.app = x.app and fe.followee = x.followee`.execute(db);
  for (const r of rows) {
    const recent = Number(r.recent);
    const followers = Number(r.follower_count);
    if (recent > options.cap) await trim(db, r.app, r.followee, options.cap);
    else if (followers > recent && recent < options.min) await refillFollowerIndex(db, r.app, r.followee, options);
    else if (followers > recent && followers <= options.cap) await topUpFollowerIndex(db, r.app, r.followee);
  }
}

/** Adds the followers a followee's index lacks (it has `cap` or fewer), under its row lock as refillFollowerIndex. */
async function topUpFollowerIndex(db: Kysely<HeraldTables>, app: string, followee: string): Promise<void> {
  const missing = sql`not exists (select 1 from follower_recent r where r.app = f.app and r.followee = f.followee and r.follower = f.follower)`;
  await underFolloweeLock(db, app, followee, async (tx) => {
    await sql`
      insert into follower_recent (app, followee, follower, active_at)
      ${followerRows(app, followee, missing)}
      on conflict (app, followee, follower) do nothing`.execute(tx);
  });
}

async function trim(db: Kysely<HeraldTables>, app: string, followee: string, cap: number): Promise<void> {
  await sql`
    delete from follower_recent r using (
      select follower from follower_recent where app = ${app} and followee = ${followee}
      order by active_at desc nulls last, follower offset ${cap}
    ) x
    where r.app = ${app} and r.followee = ${followee} and r.follower = x.follower`.execute(db);
}

/**
 * Device activity (registrations): an UPDATE moving each user's active_at forward in every index
 * they are in, once it has moved by ACTIVITY_STEP at least. `activity` is a relation (app,
 * user_id, at); device-registration.ts runs this as a CTE of its upsert, so a batch of
 * registrations stays one statement. Every app launch registers: a user following thousands,
 * in most of their indexes, rewrote thousands of index rows (and their index entries) at each
 * one (an audit measured 52 ms and 1.9 MB of WAL for one register following 5,000), where an
 * hour's precision is all "most recently active" and "active within days" need.
 */
export function followerActivitySql(activity: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    update follower_recent r set active_at = greatest(r.active_at, a.at)
    from (select app, user_id, max(at) as at from ${activity} as x group by app, user_id) a
    where r.app = a.app and r.follower = a.user_id and a.at is not null and (r.active_at is null or r.active_at < a.at - ${sql.raw(`interval '${ACTIVITY_STEP}'`)})`;
}

/** How far a follower's activity must move before their index rows are written again. */
export const ACTIVITY_STEP = '1 hour';

/** At read time: refill a full index that is older than maxAgeMs (or was never refilled). */
export async function refreshFollowerIndexIfStale(db: Kysely<HeraldTables>, app: string, followee: string, now: Date, options = DEFAULT_FOLLOWER_INDEX): Promise<void> {
  const row = await db.selectFrom('followees').select(['follower_count', 'recent_refilled_at']).where('app', '=', app).where('followee', '=', followee).executeTakeFirst();
  if (row === undefined || Number(row.follower_count) <= options.cap) return;
  const age = row.recent_refilled_at === null ? Infinity : now.getTime() - row.recent_refilled_at.getTime();
  if (age > options.maxAgeMs) await refillFollowerIndex(db, app, followee, options);
}
