import { sql, type Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';

/** Jobs per delete statement (with their outcomes and fan-out checkpoints). */
export const DEFAULT_JOB_PRUNE_BATCH = 100;

/**
 * Delete jobs accepted before `olderThan`, each with its push outcomes (job status) and its fan-out
 * checkpoint, `batchSize` jobs a statement, oldest first, until none is left or `signal` aborts.
 * A job with pushes still stored for later (scheduled_pushes) or a fan-out still expanding or
 * sending is kept, whatever its age: its status is still changing. Rows another transaction holds
 * are skipped, not waited for. Returns how many jobs were deleted.
 *
 * After this a job's id is free again: a job published again with it is a new job (the ledger,
 * whose retention is shorter by default, stopped guarding its pushes' ids long before).
 */
export async function pruneJobs(db: Kysely<HeraldTables>, olderThan: Date, batchSize = DEFAULT_JOB_PRUNE_BATCH, signal?: AbortSignal): Promise<number> {
  let total = 0;
  while (signal?.aborted !== true) {
    const { rows } = await sql<{ id: string }>`
      with doomed as (
        select j.id from jobs j
        where j.accepted_at < ${olderThan.toISOString()}::timestamptz
          and not exists (select 1 from scheduled_pushes s where s.job_id = j.id)
          and not exists (select 1 from fanouts f where f.job_id = j.id and f.state in ('expanding', 'sending'))
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
    total += rows.length;
    if (rows.length < batchSize) break;
  }
  return total;
}
