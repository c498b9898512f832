import { sql, type Kysely } from 'kysely';
import type { Platform } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';

/**
 * How often a pusher writes its lanes down again while any is (lane-state-recorder.ts): their rows'
 * `seen_at` says the pusher is still there to take them down.
 */
export const LANE_REFRESH_MS = 30_000;
/** A row not written for this long is its pusher's that died or stopped: it no longer says anything. */
export const LANE_STALE_MS = 3 * LANE_REFRESH_MS;
/** Rows not written for this long are deleted by the next write of any pusher. */
const PRUNE_AFTER = sql`interval '1 day'`;

/** A lane a pusher takes to be down now, and for how long (by its own clock). */
export interface DownLane {
  lane: string;
  downForMs: number;
}

/** One pusher's down lane as the monitor reads it: how long, by PostgreSQL's clock. */
export interface DownLaneRow extends DownLane {
  instance: string;
  platform: Platform;
}

/** One pusher's record of its lanes down (migration 0043). */
export interface ProviderLaneStore {
  /** Every lane the pusher takes to be down now: their rows written as seen now, its others deleted. */
  record(down: readonly DownLane[]): Promise<void>;
}

const msBefore = (ms: number) => sql<Date>`clock_timestamp() - ${Math.max(0, Math.round(ms))} * interval '1 millisecond'`;

/** `instance`: the pusher, `<service>@<host>:<pid>` (what its ledger claims are named by). */
export function createProviderLaneStore(db: Kysely<HeraldTables>, pusher: { instance: string; platform: Platform }): ProviderLaneStore {
  const { instance, platform } = pusher;
  return {
    async record(down) {
      const lanes = down.map((l) => l.lane);
      await db.transaction().execute(async (trx) => {
        await trx
          .deleteFrom('provider_lanes')
          .where((eb) =>
            eb.or([
              eb.and([eb('instance', '=', instance), eb('platform', '=', platform), ...(lanes.length > 0 ? [eb('lane', 'not in', lanes)] : [])]),
              eb('seen_at', '<', sql<Date>`clock_timestamp() - ${PRUNE_AFTER}`),
            ]),
          )
          .execute();
        if (down.length === 0) return;
        await trx
          .insertInto('provider_lanes')
          .values(down.map((l) => ({ instance, platform, lane: l.lane, down_since: msBefore(l.downForMs), seen_at: sql<Date>`clock_timestamp()` })))
          .onConflict((oc) => oc.columns(['instance', 'platform', 'lane']).doUpdateSet({ down_since: sql`excluded.down_since`, seen_at: sql`excluded.seen_at` }))
          .execute();
      });
    },
  };
}

/** PostgreSQL's undefined_table: `relation "provider_lanes" does not exist`. */
const UNDEFINED_TABLE = '42P01';

/**
 * Every lane some pusher takes to be down, from rows written within LANE_STALE_MS (by platform,
 * lane, instance). Undefined when the schema has no provider_lanes yet (migration 0043 not applied:
 * a reader started before `prepare`, or let through unchecked by untilMigrated while PostgreSQL did
 * not answer), so a reader can tell that apart from a database that does not answer, and go on
 * with its other reads (the monitor's scheduled-overdue and certificate alarms).
 */
export async function readDownLanes(db: Kysely<HeraldTables>): Promise<DownLaneRow[] | undefined> {
  const downForMs = sql<number>`(extract(epoch from clock_timestamp() - down_since) * 1000)::float8`;
  const rows = await db
    .selectFrom('provider_lanes')
    .select(['instance', 'platform', 'lane', downForMs.as('down_for_ms')])
    .where('seen_at', '>', msBefore(LANE_STALE_MS))
    .orderBy('platform')
    .orderBy('lane')
    .orderBy('instance')
    .execute()
    .catch((err: unknown) => {
      if ((err as { code?: unknown }).code === UNDEFINED_TABLE) return undefined;
      throw err;
    });
  return rows?.map((r) => ({ instance: r.instance, platform: r.platform, lane: r.lane, downForMs: Math.max(0, Number(r.down_for_ms)) }));
}
