import { sql, type Kysely } from 'kysely';
import { deleteInBatches } from './delete-in-batches.ts';
import type { HeraldTables } from './tables.ts';

/** Expired mutes per delete statement. */
export const DEFAULT_MUTE_PRUNE_BATCH = 1_000;

/**
 * Delete mutes that expired before `expiredBefore` (and before the database's now, whichever is
 * earlier, so a process clock running ahead cannot end a mute early): targeting reads a mute only
 * while it is active (until NULL or after now, skipReasonSql), so an expired one changes nothing,
 * and nothing else deleted it (only clearing a mute did). `batchSize` rows a statement, earliest
 * expiry first (partial index mutes_by_until, migration 0031), until none is left or `signal`
 * aborts; rows another transaction holds (a mute being set again) are skipped, not waited for.
 * Returns how many were deleted.
 *
 * Each batch is one statement, a transaction of its own, so it runs behind a transaction-mode
 * pooler, and two registrars pruning side by side skip each other's rows.
 */
export async function pruneExpiredMutes(db: Kysely<HeraldTables>, expiredBefore: Date, batchSize = DEFAULT_MUTE_PRUNE_BATCH, signal?: AbortSignal): Promise<number> {
  const before = sql`least(${expiredBefore.toISOString()}::timestamptz, now())`;
  return deleteInBatches(batchSize, signal, async () => {
    const { rows } = await sql<{ n: number }>`
      with doomed as (
        select m.ctid from mutes m
        where m.until is not null and m.until < ${before}
        order by m.until
        limit ${batchSize}
        for update of m skip locked
      )
      delete from mutes m using doomed x where m.ctid = x.ctid
      returning 1 as n`.execute(db);
    return rows.length;
  });
}
