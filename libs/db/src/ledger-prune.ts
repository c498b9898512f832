import { sql, type Kysely } from 'kysely';
import { deleteInBatches } from './delete-in-batches.ts';
import type { HeraldTables } from './tables.ts';

export const DEFAULT_PRUNE_BATCH = 5_000;

/**
 * Delete ledger entries older than `olderThan` in batches of `batchSize` rows, each batch its own
 * short statement (no long transaction, no table-wide lock): entries claimed before `olderThan` and,
 * if done, completed before it too (an abandoned 'sending' claim has no completion). One index
 * serves both, on claimed_at, which marking an entry done leaves alone so the mark is an in-place
 * update (migration 0023); a completion follows its claim (or a renewed one) by at most a lease and
 * the retry of its write, so the filter on completed_at rarely skips a row. Stops between batches
 * once `signal` is aborted. Returns how many were deleted.
 */
export async function pruneLedger(
  db: Kysely<HeraldTables>,
  olderThan: Date,
  batchSize = DEFAULT_PRUNE_BATCH,
  signal?: AbortSignal,
): Promise<number> {
  const batch = pruneBatch(olderThan, batchSize);
  return deleteInBatches(batchSize, signal, async () => {
    const result = await sql`delete from delivery_ledger where push_id in (${batch})`.execute(db);
    return Number(result.numAffectedRows ?? 0n);
  });
}

/** The push ids of the next `batchSize` entries to prune (pruneLedger), oldest claim first. */
export const pruneBatch = (olderThan: Date, batchSize: number) => {
  const before = olderThan.toISOString();
  return sql<{ push_id: string }>`
  select push_id from delivery_ledger
  where claimed_at < ${before}::timestamptz and (completed_at is null or completed_at < ${before}::timestamptz)
  order by claimed_at limit ${batchSize}`;
};

/**
 * The advisory lock that lets one process at a time prune: (class, hashtext(schema)), so pushers
 * of different schemas in one database do not wait for each other. Visible in pg_locks as
 * locktype 'advisory' with classid = LEDGER_PRUNE_LOCK_CLASS.
 */
export const LEDGER_PRUNE_LOCK_CLASS = 0x4c50;

/**
 * pruneLedger under a session-level advisory lock taken with pg_try_advisory_lock on one pooled
 * connection (each batch still its own statement). Returns undefined, touching nothing, when
 * another session holds the lock. A lost connection releases the lock with it.
 */
export async function pruneLedgerExclusively(
  db: Kysely<HeraldTables>,
  olderThan: Date,
  batchSize = DEFAULT_PRUNE_BATCH,
  signal?: AbortSignal,
): Promise<number | undefined> {
  const key = sql`${LEDGER_PRUNE_LOCK_CLASS}::int, hashtext(current_schema())`;
  return db.connection().execute(async (conn) => {
    const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${key}) as locked`.execute(conn);
    if (rows[0]?.locked !== true) return undefined;
    try {
      return await pruneLedger(conn, olderThan, batchSize, signal);
    } finally {
      await sql`select pg_advisory_unlock(${key})`.execute(conn);
    }
  });
}
