import { sql, type Kysely } from 'kysely';
import { exclusively } from './ledger-prune.ts';
import type { HeraldTables } from './tables.ts';

/** Dead devices per delete statement. */
export const DEFAULT_DEVICE_PRUNE_BATCH = 1_000;

/** The advisory lock class that lets one process at a time prune devices (see exclusively). */
export const DEVICE_PRUNE_LOCK_CLASS = 0x4450;

/**
 * Delete dead devices (invalidated tokens and unregistered tombstones) that nothing has changed
 * since before `olderThan`: every time the row keeps (its last change, last event, invalidation
 * and fast-clock mark) is older. So any event the row would have found stale is older than
 * `olderThan` too, and the registrar parks registers that old (DEVICE_RETENTION_DAYS): a pruned
 * tombstone cannot be resurrected by a late register. `batchSize` rows a statement, oldest change
 * first (index devices_dead_by_updated_at, migration 0030), until none is left or `signal` aborts;
 * rows another transaction holds are skipped, not waited for. Returns how many were deleted.
 *
 * A device a stored scheduled push still names is kept: the pusher's claim drops a push to a dead
 * device only while its row is there (a push whose device row is gone is sent). The devices
 * those pushes name are read once a prune, into a temporary table of the prune's session. Nothing
 * else needs the row: a fan-out chunk redone after a redelivery records a device gone as
 * 'device-gone', a topic's device member names a token (resolved at read time, like one not yet
 * registered), and a job's push listing shows a pruned device's token as null.
 */
export function pruneDevices(db: Kysely<HeraldTables>, olderThan: Date, batchSize = DEFAULT_DEVICE_PRUNE_BATCH, signal?: AbortSignal): Promise<number> {
  return db.connection().execute((conn) => pruneOnSession(conn, olderThan, batchSize, signal));
}

/** pruneDevices on one session (`conn` holds one connection: the temporary table is the session's). */
async function pruneOnSession(conn: Kysely<HeraldTables>, olderThan: Date, batchSize: number, signal?: AbortSignal): Promise<number> {
  const before = sql`${olderThan.toISOString()}::timestamptz`;
  await sql`drop table if exists pg_temp.herald_devices_still_named`.execute(conn);
  await sql`
    create temporary table herald_devices_still_named as
    select distinct d.id from scheduled_pushes s
    join devices d on d.id = case when s.payload->>'deviceId' ~ '^[0-9]{1,18}$' then (s.payload->>'deviceId')::bigint end
    where d.invalidated_at is not null and d.updated_at < ${before}`.execute(conn);
  try {
    let total = 0;
    while (signal?.aborted !== true) {
      const { rows } = await sql<{ id: string }>`
        with doomed as (
          select d.id from devices d
          where d.invalidated_at is not null and d.updated_at < ${before}
            and d.last_event_at < ${before} and d.invalidated_at < ${before}
            and (d.event_ahead_mark is null or d.event_ahead_mark < ${before})
            and not exists (select 1 from pg_temp.herald_devices_still_named k where k.id = d.id)
          order by d.updated_at
          limit ${batchSize}
          for update of d skip locked
        )
        delete from devices d using doomed x where d.id = x.id
        returning d.id::text as id`.execute(conn);
      total += rows.length;
      if (rows.length < batchSize) break;
    }
    return total;
  } finally {
    await sql`drop table if exists pg_temp.herald_devices_still_named`.execute(conn);
  }
}

/** pruneDevices by one process of the fleet at a time; undefined when another holds the lock. */
export function pruneDevicesExclusively(db: Kysely<HeraldTables>, olderThan: Date, batchSize = DEFAULT_DEVICE_PRUNE_BATCH, signal?: AbortSignal): Promise<number | undefined> {
  return exclusively(db, DEVICE_PRUNE_LOCK_CLASS, (conn) => pruneOnSession(conn, olderThan, batchSize, signal));
}
