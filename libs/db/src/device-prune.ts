import { sql, type Kysely } from 'kysely';
import { deleteInBatches } from './delete-in-batches.ts';
import type { HeraldTables } from './tables.ts';

/** Dead devices per delete statement. */
export const DEFAULT_DEVICE_PRUNE_BATCH = 1_000;

/**
 * Delete devices whose token a provider declared dead (invalidated for any reason but
 * 'unregistered') and that nothing has changed since before `olderThan`: every time the row keeps
 * (its last change, last event, invalidation and fast-clock mark) is older. `batchSize` rows a
 * statement, oldest change first (index devices_dead_by_updated_at, migration 0030), until none is
 * left or `signal` aborts; rows another transaction holds are skipped, not waited for. Returns how
 * many were deleted.
 *
 * An unregister's tombstone (a logout) is kept: the phone's token still works, and the tombstone
 * is what makes a late, older register stale. A dead token's row is safe to delete: a push still
 * naming it (queued, parked, stored for later) is dropped as dead by the pusher's claim, which
 * takes a device row that is gone for dead (sent, it reached whoever holds the token now: a
 * reinstall gives an APNs token back, to another user maybe, as a new row), and a register older
 * than the invalidation arriving after the row is gone registers the token again until its next
 * push is answered dead (one request, not a lost or misdirected push).
 *
 * Each batch is one statement, a transaction of its own, so it runs behind a transaction-mode
 * pooler, and two registrars pruning side by side skip each other's rows.
 *
 * The sign-outs kept of a device (device_signouts, migration 0044) go with it, and, after the
 * devices, every sign-out older than `olderThan` (the device retention) goes too, in batches alike:
 * a sign-in of that user stamped before it arriving even later applies as a sign-in. Returns the
 * devices deleted.
 */
export async function pruneDevices(db: Kysely<HeraldTables>, olderThan: Date, batchSize = DEFAULT_DEVICE_PRUNE_BATCH, signal?: AbortSignal): Promise<number> {
  const before = sql`${olderThan.toISOString()}::timestamptz`;
  const devices = await deleteInBatches(batchSize, signal, async () => {
    const { rows } = await sql<{ id: string }>`
      with doomed as (
        select d.id from devices d
        where d.invalidated_at is not null and d.invalidation_reason <> 'unregistered' and d.updated_at < ${before}
          and d.last_event_at < ${before} and d.invalidated_at < ${before}
          and (d.event_ahead_mark is null or d.event_ahead_mark < ${before})
        order by d.updated_at
        limit ${batchSize}
        for update of d skip locked
      ), gone as (
        delete from devices d using doomed x where d.id = x.id
        returning d.id, d.app, d.platform, d.token
      ), signouts as (
        delete from device_signouts s using gone g where s.app = g.app and s.platform = g.platform and s.token = g.token
      )
      select id::text as id from gone`.execute(db);
    return rows.length;
  });
  await deleteInBatches(batchSize, signal, async () => {
    const { numAffectedRows } = await sql`
      with doomed as (
        select app, platform, token, user_id from device_signouts where signed_out_at < ${before}
        order by signed_out_at
        limit ${batchSize}
        for update skip locked
      )
      delete from device_signouts s using doomed x
      where s.app = x.app and s.platform = x.platform and s.token = x.token and s.user_id = x.user_id`.execute(db);
    return Number(numAffectedRows ?? 0);
  });
  return devices;
}
