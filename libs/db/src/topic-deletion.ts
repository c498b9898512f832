import { sql, type Kysely } from 'kysely';
import { deleteWhileFull } from './delete-in-batches.ts';
import type { HeraldTables } from './tables.ts';

/** Member rows of a deleted topic per delete statement. */
export const DEFAULT_TOPIC_DELETE_BATCH = 10_000;

/**
 * How long a topic's deletion is kept (migration 0042): the 90 days a dead device's row is kept
 * by default (DEVICE_RETENTION_DAYS). An event older than a deletion arriving later than that (a
 * parked message replayed months on) is taken as a register older than a pruned dead device is.
 */
const DELETION_RETENTION = sql`interval '90 days'`;

/** Deletions past the retention each delete prunes: more than the one it adds, so they cannot pile up. */
const PRUNED_PER_DELETE = 100;

/**
 * Deletes the topic's row, recording the deletion (topic_deletions) in the same statement; false
 * when there was none. From its commit a job to the topic is refused, a subscribe finds it unknown,
 * and one stamped at or before the deletion stays out of the topic created again
 * (applyTopicMemberships). It waits for the membership batches holding the topic, whose members are
 * then removed with the others. Its member rows are not removed here: that is removeDeletedMembers'
 * work, a batch at a time, after the caller has answered (a topic of millions takes minutes), and
 * the registrars' sweep's (topic-member-sweep.ts) for a removal cut short or never begun. Until they
 * go they are no membership to those who decide who gets a push: a fan-out's chunks
 * (audience-stream.ts) and a stored push's release (leftAudienceSql) ask whether the topic exists;
 * creating the topic again (createTopic, createTopicWithin) removes them first, or is refused while
 * some remain.
 */
export async function deleteTopic(db: Kysely<HeraldTables>, app: string, name: string): Promise<boolean> {
  // PostgreSQL's clock once the topic's row is had (clock_timestamp, not the statement's start: a
  // subscribe applied while the delete waited is older than it), as an erasure's (user-erasure.ts).
  const { rows } = await sql<{ topic: string }>`
    with gone as (delete from topics where app = ${app} and name = ${name} returning app, name)
    insert into topic_deletions (app, topic, deleted_at)
    select app, name, clock_timestamp() from gone
    on conflict (app, topic) do update set deleted_at = greatest(topic_deletions.deleted_at, excluded.deleted_at)
    returning topic`.execute(db);
  if (rows.length === 0) return false;
  await pruneDeletions(db);
  return true;
}

export interface RemoveMembersOptions {
  /** Member rows per statement (DEFAULT_TOPIC_DELETE_BATCH). */
  batchSize?: number;
  /** Stops the removal between two batches. */
  signal?: AbortSignal;
  /**
   * Skip rows another transaction holds instead of waiting for them (a removal in the background,
   * the sweep, the API's create, createTopicWithin): such a removal never waits on a lock, so a stop
   * waits for one statement at most, and what it skipped is the other's or the next sweep's. Without
   * it (createTopic, the CLI) every row is removed.
   */
  skipLocked?: boolean;
  /** Told after each batch that deleted rows, with their number (the CLI's progress). */
  onBatch?: (deleted: number) => void | Promise<void>;
}

/**
 * Deletes the member rows of a topic the app no longer has, `batchSize` a statement (a transaction
 * each) in the writers' lock order (app, topic, member kind, member id), until none is left, the
 * topic exists again or `signal` aborts. Each statement asks whether the topic exists: once it is
 * created again (createTopic removes the rest before it creates it), a removal still under way
 * deletes nothing more, so it never meets a member of the new topic. The deletion stays at the clock
 * it was made by: moved on to its members' event times (a phone's clock a few minutes fast), it held
 * every subscribe to the topic created again stale for those minutes, one member's clock closing the
 * topic to all. So a subscribe stamped ahead by a fast clock, applied before the deletion and
 * delivered again after the topic was created again, joins it (an erasure, which concerns one user,
 * covers its user's times). Returns how many it deleted.
 */
export async function removeDeletedMembers(db: Kysely<HeraldTables>, app: string, name: string, options: RemoveMembersOptions = {}): Promise<number> {
  const batchSize = options.batchSize ?? DEFAULT_TOPIC_DELETE_BATCH;
  const lock = options.skipLocked === true ? sql`for update of m skip locked` : sql`for update of m`;
  return deleteWhileFull(options.signal, async () => {
    const { rows } = await sql<{ n: string }>`
      with doomed as (
        select m.app, m.topic, m.member_kind, m.member_id from topic_members m
        where m.app = ${app} and m.topic = ${name} and not exists (select 1 from topics t where t.app = ${app} and t.name = ${name})
        order by m.app, m.topic, m.member_kind, m.member_id
        limit ${batchSize}
        ${lock}
      ), gone as (
        delete from topic_members m using doomed d
        where m.app = d.app and m.topic = d.topic and m.member_kind = d.member_kind and m.member_id = d.member_id
        returning 1
      )
      select count(*) as n from gone`.execute(db);
    const deleted = Number(rows[0]?.n ?? 0);
    if (deleted > 0) await options.onBatch?.(deleted);
    // A batch whose rows another statement deleted meanwhile (an erasure, a second delete) deletes
    // fewer than it locked: only one that found none says the topic's members are gone (or, skipping
    // locked rows, that those left are another's to delete).
    return { deleted, full: deleted > 0 };
  });
}

/** Whether member rows of a deleted topic remain (the topic being created again must not take them). */
export async function hasDeletedMembers(db: Kysely<HeraldTables>, app: string, name: string): Promise<boolean> {
  const row = await db.selectFrom('topic_members').select('member_id').where('app', '=', app).where('topic', '=', name).limit(1).executeTakeFirst();
  return row !== undefined;
}

/**
 * Deletes up to PRUNED_PER_DELETE deletions past the retention, oldest first, skipping rows another
 * holds. One whose topic's member rows remain (the topic not created again) is kept: it is how the
 * sweep (topic-member-sweep.ts) finds them.
 */
async function pruneDeletions(db: Kysely<HeraldTables>): Promise<void> {
  await sql`
    delete from topic_deletions d using (
      select x.app, x.topic from topic_deletions x
      where x.deleted_at < now() - ${DELETION_RETENTION}
        and (exists (select 1 from topics t where t.app = x.app and t.name = x.topic)
          or not exists (select 1 from topic_members m where m.app = x.app and m.topic = x.topic))
      order by x.deleted_at limit ${PRUNED_PER_DELETE} for update of x skip locked
    ) x where d.app = x.app and d.topic = x.topic`.execute(db);
}
