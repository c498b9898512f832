import { sql, type Kysely, type RawBuilder } from 'kysely';
import { deleteWhileFull } from './delete-in-batches.ts';
import type { HeraldTables } from './tables.ts';

/** Jobs per delete statement (looked at and locked; deleted once their outcomes are gone). */
export const DEFAULT_JOB_PRUNE_BATCH = 100;

/**
 * Push outcomes deleted per statement at most, over the jobs it holds: about 2 MB of WAL and a
 * fraction of a second, well inside the statement timeout, so a broadcast's millions of outcomes go
 * over many short transactions (a thousand statements for 10 million) rather than one that fails.
 */
export const DEFAULT_JOB_PRUNE_OUTCOME_SLICE = 10_000;

/**
 * Delete jobs last active before `olderThan`, each with its push outcomes (job status) and its
 * fan-out checkpoint, `batchSize` jobs a statement, oldest first, until none is left or `signal`
 * aborts (outcomes written after their job went are pruneOrphanOutcomes'). A job's last activity
 * is the latest of its acceptance, its demux and the latest due time of a push of it stored for later
 * (last_due_at, migration 0032): a job scheduled 45 days ahead keeps its status 45 days plus the
 * retention, not until the first prune after its pushes were released. Its demux (demuxed_at, when
 * the demuxer first recorded it, or took it again after a park): a row's accepted_at is the job's own
 * stamp, which may be a month old (a parked job an operator replays; one that waited in push.jobs),
 * and its pushes are then still on their way and in retry; pruned by accepted_at alone within the
 * hour, the job would answer 404 and its id be free while the ledger kept its pushes'. demuxed_at comes
 * soon after accepted_at but for such a job, so the index on accepted_at still serves the scan: it
 * passes over only the jobs accepted before `olderThan` and demuxed since. A job with pushes still stored for
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
 * A statement deletes at most `outcomeSlice` outcomes of the jobs it holds (through the primary
 * key, job_id then push_id: an index range scan), and a job with its fan-out checkpoint only in
 * the statement that deletes its last outcomes: a broadcast's millions of outcomes go over many
 * short statements, not one huge transaction. A job part of whose outcomes are gone (a prune
 * stopped, the process gone, between two statements) keeps its row, still past its retention, so
 * the next statement or run goes on with it: its status meanwhile counts only the outcomes left,
 * which, for a job past its retention, is acceptable. Each statement locks its jobs (skipping
 * those another prune holds), so two prunes side by side never share a job, and each job is
 * deleted, and counted, once.
 *
 * After this a job's id is free again: a job published again with it is a new job (the ledger,
 * whose retention is shorter by default, stopped guarding its pushes' ids long before).
 */
export async function pruneJobs(
  db: Kysely<HeraldTables>,
  olderThan: Date,
  batchSize = DEFAULT_JOB_PRUNE_BATCH,
  signal?: AbortSignal,
  outcomeSlice = DEFAULT_JOB_PRUNE_OUTCOME_SLICE,
): Promise<number> {
  const before = sql`${olderThan.toISOString()}::timestamptz`;
  const stuckBefore = new Date(Math.min(olderThan.getTime(), Date.now() - STUCK_FANOUT_DAYS * 86_400_000));
  await settleSentFanouts(db, stuckBefore);
  return deleteWhileFull(signal, async () => {
    // emptied: the jobs none of whose outcomes is left past this slice (it holds every one the
    // statement sees, counted no further than one past what it took of the job).
    const { rows } = await sql<{ jobs: number; outcomes: number }>`
      with doomed as (
        select j.id from jobs j
        where j.accepted_at < ${before} and coalesce(j.demuxed_at, j.accepted_at) < ${before} and (j.last_due_at is null or j.last_due_at < ${before})
          and not exists (select 1 from scheduled_pushes s where s.job_id = j.id)
          and not exists (select 1 from fanouts f where f.job_id = j.id and f.state in ('expanding', 'sending') and f.updated_at >= ${stuckBefore.toISOString()}::timestamptz
            and not coalesce(j.demux_outcome like 'parked: %', false))
        order by j.accepted_at
        limit ${batchSize}
        for update of j skip locked
      ), slice as (
        select o.job_id, o.push_id from doomed d
        cross join lateral (select o.job_id, o.push_id from push_outcomes o where o.job_id = d.id order by o.push_id limit ${outcomeSlice}) o
        limit ${outcomeSlice}
      ), sliced as (
        select job_id, count(*) as n from slice group by job_id
      ), outcomes as (
        delete from push_outcomes o using slice s where o.job_id = s.job_id and o.push_id = s.push_id
      ), emptied as (
        select d.id from doomed d left join sliced s on s.job_id = d.id
        where (select count(*) from (select 1 from push_outcomes o where o.job_id = d.id limit coalesce(s.n, 0) + 1) c) = coalesce(s.n, 0)
      ), checkpoints as (
        delete from fanouts f using emptied e where f.job_id = e.id
      ), gone as (
        delete from jobs j using emptied e where j.id = e.id
        returning j.id
      )
      select (select count(*) from gone)::int as jobs, (select count(*) from slice)::int as outcomes`.execute(db);
    const jobs = rows[0]?.jobs ?? 0;
    // Full: every job it could hold, or a whole slice of outcomes; more may be left either way.
    return { deleted: jobs, full: jobs >= batchSize || (rows[0]?.outcomes ?? 0) >= outcomeSlice };
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
        and (select count(*) from (select 1 from push_outcomes o where o.job_id = f.job_id and o.outcome <> 'replayed'
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
