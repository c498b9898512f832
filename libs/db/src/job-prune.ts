import { sql, type Kysely, type RawBuilder } from 'kysely';
import { deleteInBatches } from './delete-in-batches.ts';
import type { HeraldTables } from './tables.ts';

/** Jobs per delete statement (with their outcomes and fan-out checkpoints). */
export const DEFAULT_JOB_PRUNE_BATCH = 100;

/**
 * Delete jobs last active before `olderThan`, each with its push outcomes (job status) and its
 * fan-out checkpoint, `batchSize` jobs a statement, oldest first, until none is left or `signal`
 * aborts (outcomes written after their job went are pruneOrphanOutcomes'). A job's last activity
 * is the later of its acceptance and the latest due time of a push of it stored for later
 * (last_due_at, migration 0032): a job scheduled 45 days ahead keeps its status 45 days plus the
 * retention, not until the first prune after its pushes were released. A job with pushes still stored for
 * later (scheduled_pushes) or a fan-out still expanding or sending is kept: its status is still
 * changing (not one whose chunk task was parked: it changes only if replayed; nor one whose state
 * last changed, when it began or finished expanding, more than STUCK_FANOUT_DAYS ago, or the
 * retention if longer: a sending fan-out one of whose outcomes never came, a pusher having lost it
 * in an outage, was kept, and its outcomes counted every hour, for good). A sending
 * fan-out whose every push has an outcome is marked done first (settleSentFanouts), else only a
 * look at the dashboard's running fan-outs did, and a deployment that never opened it kept every
 * audience job. Rows another transaction holds are skipped, not waited for. Returns how
 * many jobs were deleted.
 *
 * After this a job's id is free again: a job published again with it is a new job (the ledger,
 * whose retention is shorter by default, stopped guarding its pushes' ids long before).
 */
export async function pruneJobs(db: Kysely<HeraldTables>, olderThan: Date, batchSize = DEFAULT_JOB_PRUNE_BATCH, signal?: AbortSignal): Promise<number> {
  const before = sql`${olderThan.toISOString()}::timestamptz`;
  const stuckBefore = new Date(Math.min(olderThan.getTime(), Date.now() - STUCK_FANOUT_DAYS * 86_400_000));
  await settleSentFanouts(db, stuckBefore);
  return deleteInBatches(batchSize, signal, async () => {
    const { rows } = await sql<{ id: string }>`
      with doomed as (
        select j.id from jobs j
        where j.accepted_at < ${before} and (j.last_due_at is null or j.last_due_at < ${before})
          and not exists (select 1 from scheduled_pushes s where s.job_id = j.id)
          and not exists (select 1 from fanouts f where f.job_id = j.id and f.state in ('expanding', 'sending') and f.updated_at >= ${stuckBefore.toISOString()}::timestamptz
            and not coalesce(j.demux_outcome like 'parked: %', false))
        order by j.accepted_at
        limit ${batchSize}
        for update of j skip locked
      ), outcomes as (
        delete from push_outcomes o using doomed d where o.job_id = d.id
      ), checkpoints as (
        delete from fanouts f using doomed d where f.job_id = d.id
      )
      delete from jobs j using doomed d where j.id = d.id
      returning j.id`.execute(db);
    return rows.length;
  });
}

/**
 * How long a fan-out that began or finished expanding is taken to be still at work, at the least,
 * whatever the job retention: a broadcast an app's budget paces over days keeps its job (its
 * status, its cancel) until then. Past it, one still expanding or sending is stuck (an outcome lost).
 */
export const STUCK_FANOUT_DAYS = 30;

/**
 * Sending fan-outs (every chunk done) whose every push has an outcome become done, as the
 * dashboard's running list marks those it shows (fanouts.markSettled): a cancel then finds nothing
 * left to stop, and the job's prune is no longer held back. Only fan-out rows are locked, and one
 * another transaction holds is skipped (a cancel, the dashboard), not waited for; each job's
 * outcomes are counted only as far as it needs, and not at all for a fan-out idle since before
 * `idleBefore` (the prune takes it). Returns how many were marked.
 */
export async function settleSentFanouts(db: Kysely<HeraldTables>, idleBefore?: Date): Promise<number> {
  const { rows } = await sql<{ job_id: string }>`
    with settled as (
      select f.job_id from fanouts f join jobs j on j.id = f.job_id
      where f.state = 'sending' and j.targeted is not null
        and (${idleBefore?.toISOString() ?? null}::timestamptz is null or f.updated_at >= ${idleBefore?.toISOString() ?? null}::timestamptz)
        and (select count(*) from (select 1 from push_outcomes o where o.job_id = f.job_id
             limit greatest(j.targeted - coalesce(j.no_device, 0), 0)) c) >= j.targeted - coalesce(j.no_device, 0)
      for update of f skip locked
    )
    update fanouts f set state = 'done', updated_at = now() from settled s
    where f.job_id = s.job_id
    returning f.job_id`.execute(db);
  return rows.length;
}

/** Distinct job ids of push_outcomes looked at per statement by pruneOrphanOutcomes. */
export const DEFAULT_ORPHAN_WALK = 1_000;

/**
 * Delete push outcomes whose job row is gone: one written after its job was pruned (a push
 * delivered, retried or replayed from its parked queue long after it was due), which no job prune
 * would ever reach, and which a job published again with that id would count as its own. Walks
 * the distinct job ids of push_outcomes in order through its primary key (one index descent each,
 * `walk` ids a statement, the walk's position kept here between statements, not in the session),
 * deleting the outcomes of those without a job; rows another transaction holds are skipped. With
 * `maxStatements`, a run stops after that many and leaves `cursor` where the next run goes on (a
 * table of millions of jobs is not walked whole every hour by every demuxer). No
 * outcome is written before its job's row (the demuxer records the job before it publishes its
 * pushes), so one without a job is never a job still starting. Returns how many rows were deleted.
 */
export async function pruneOrphanOutcomes(
  db: Kysely<HeraldTables>,
  walk = DEFAULT_ORPHAN_WALK,
  signal?: AbortSignal,
  cursor: OrphanWalk = { after: null },
  maxStatements = Number.POSITIVE_INFINITY,
): Promise<number> {
  let after = cursor.after;
  let total = 0;
  for (let statements = 0; signal?.aborted !== true; statements++) {
    if (statements >= maxStatements) {
      // The rest next time, from here: a run costs at most maxStatements × walk index lookups.
      cursor.after = after;
      return total;
    }
    const from: RawBuilder<unknown> = after === null ? sql`` : sql`where job_id > ${after}`;
    const { rows } = await sql<{ last: string | null; walked: number; deleted: number }>`
      with recursive ids(job_id, n) as (
        (select job_id, 1 from push_outcomes ${from} order by job_id limit 1)
        union all
        select (select o.job_id from push_outcomes o where o.job_id > ids.job_id order by o.job_id limit 1), ids.n + 1
        from ids where ids.job_id is not null and ids.n < ${walk}
      ), walked as (
        select job_id from ids where job_id is not null
      ), doomed as (
        select o.job_id, o.push_id from push_outcomes o
        where o.job_id in (select w.job_id from walked w where not exists (select 1 from jobs j where j.id = w.job_id))
        for update of o skip locked
      ), gone as (
        delete from push_outcomes o using doomed d where o.job_id = d.job_id and o.push_id = d.push_id
        returning 1
      )
      select (select max(job_id) from walked) as last, (select count(*) from walked)::int as walked, (select count(*) from gone)::int as deleted`.execute(db);
    const r = rows[0];
    total += r?.deleted ?? 0;
    if (r === undefined || r.last === null || r.walked < walk) break;
    after = r.last;
  }
  // The whole table walked (or stopped): the next run starts from the beginning.
  cursor.after = null;
  return total;
}

/** Where an orphan walk left off (pruneOrphanOutcomes' cursor), kept by its caller between runs. */
export interface OrphanWalk {
  after: string | null;
}

/** Statements an hourly orphan walk runs at most (each DEFAULT_ORPHAN_WALK job ids): the table is covered over several runs. */
export const ORPHAN_WALK_STATEMENTS_PER_RUN = 20;
