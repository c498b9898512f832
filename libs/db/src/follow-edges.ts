import { sql, type Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';
import { applyToFollowerIndex, DEFAULT_FOLLOWER_INDEX, rebalanceFollowerIndex, type FollowerIndexOptions } from './follow-index.ts';
import { aheadMarkSql, appliedAtSql, laterEventSql } from './later-event.ts';

/** "follower follows (or unfollowed) followee" at the caller's event time. */
export interface FollowEdgeEvent {
  app: string;
  follower: string;
  followee: string;
  following: boolean;
  eventAt: string;
}

export type FollowResult = 'applied' | 'stale';

const keyOf = (e: { app: string; followee: string; follower: string }) => JSON.stringify([e.app, e.followee, e.follower]);

/**
 * Takes a lock per followee of the batch, in one order, before any edge is written: the count
 * triggers lock the followees rows only after the upsert (those of changed edges before those of
 * new ones, migration 0020), so two batches each holding a followee the other's trigger wanted
 * next deadlocked (40P01). A followee's row may not exist yet (the trigger inserts it), so the
 * lock is a transaction advisory lock, of the schema, on the bucket of (app, followee)'s hash,
 * taken in bucket order; inserting the missing rows first would store a user an erasure keeps out.
 */
async function lockFollowees(tx: Kysely<HeraldTables>, events: readonly FollowEdgeEvent[]): Promise<void> {
  // One of FOLLOWEE_LOCK_BUCKETS locks a followee (its hash's bucket), so a batch of 1,000 followees
  // takes at most that many advisory locks, not 1,000 (each a slot of PostgreSQL's shared lock
  // table: a few imports at once could exhaust it); two followees sharing a bucket only wait.
  await sql`
    select pg_advisory_xact_lock(hashtext('herald followees ' || current_schema()), b) from (
      select distinct (hashtext(app || ' ' || followee) & ${FOLLOWEE_LOCK_BUCKETS - 1}) as b
      from unnest(${events.map((e) => e.app)}::text[], ${events.map((e) => e.followee)}::text[]) as x(app, followee)
      order by b
    ) l`.execute(tx);
}

/** How many advisory locks the followees of the schema are spread over (a power of two). */
const FOLLOWEE_LOCK_BUCKETS = 64;

/**
 * Applies follow events in one statement, their followees locked first (lockFollowees); last
 * event wins per edge (an event older than the edge's stored event_at is 'stale',
 * later-event.ts; within a batch the newest per edge wins).
 * Follower counts follow by trigger; the recently-active index is updated in the same transaction,
 * then trimmed or refilled after it (follow-index.ts).
 */
export async function applyFollowEvents(
  db: Kysely<HeraldTables>,
  events: readonly FollowEdgeEvent[],
  index: FollowerIndexOptions = DEFAULT_FOLLOWER_INDEX,
): Promise<FollowResult[]> {
  const results: FollowResult[] = events.map(() => 'stale');
  if (events.length === 0) return results;
  const best = new Map<string, number>();
  events.forEach((e, i) => {
    const j = best.get(keyOf(e));
    if (j === undefined || Date.parse((events[j] as FollowEdgeEvent).eventAt) <= Date.parse(e.eventAt)) best.set(keyOf(e), i);
  });
  const winners = [...best.values()].map((i) => events[i] as FollowEdgeEvent);
  const col = <K extends keyof FollowEdgeEvent>(k: K) => winners.map((w) => w[k]);
  // The edges and their index entries in one transaction (applyToFollowerIndex).
  const rows = await db.transaction().execute(async (tx) => {
    await lockFollowees(tx, winners);
    const changed = await sql<{ app: string; followee: string; follower: string; following: boolean }>`
    insert into follows as f (app, followee, follower, following, event_at, event_applied_at)
    select *, now() from unnest(${col('app')}::text[], ${col('followee')}::text[], ${col('follower')}::text[], ${col('following')}::boolean[], ${col('eventAt')}::timestamptz[])
    order by 1, 2, 3 -- after the followees, one lock order for every batch: no deadlocks
    on conflict (app, followee, follower) do update set following = excluded.following, event_at = excluded.event_at,
      event_ahead_mark = ${aheadMarkSql(sql`excluded.event_at`, sql`f.event_at`, sql`f.event_applied_at`, sql`f.event_ahead_mark`)},
      event_applied_at = ${appliedAtSql(sql`excluded.event_at`, sql`f.event_at`, sql`f.event_applied_at`, sql`excluded.event_applied_at`)}
    where ${laterEventSql(sql`excluded.event_at`, sql`f.event_at`, sql`f.event_applied_at`, sql`f.event_ahead_mark`)}
    returning f.app, f.followee, f.follower, f.following`.execute(tx);
    await applyToFollowerIndex(tx, changed.rows);
    return changed.rows;
  });
  const applied = new Set(rows.map(keyOf));
  for (const i of best.values()) if (applied.has(keyOf(events[i] as FollowEdgeEvent))) results[i] = 'applied';
  await rebalanceFollowerIndex(db, rows, index);
  return results;
}

/** How many follow the user (exact, kept by trigger). */
export async function followerCount(db: Kysely<HeraldTables>, app: string, followee: string): Promise<number> {
  const row = await db.selectFrom('followees').select('follower_count').where('app', '=', app).where('followee', '=', followee).executeTakeFirst();
  return row === undefined ? 0 : Number(row.follower_count);
}
