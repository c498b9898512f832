import { sql, type Kysely } from 'kysely';
import type { LimitedChannel } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';

/** A budget key: a platform, and an app for a per-app budget ('' or absent: the whole platform). */
export interface RateLimitKey {
  platform: LimitedChannel;
  app?: string;
}

export interface RateLimitRow {
  platform: LimitedChannel;
  /** '' for the platform-wide budget. */
  app: string;
  ratePerSec: number;
  updatedAt: Date;
}

/** What one lease call got: tokens for the current window only, and when that window ends. */
export interface RateLimitGrant {
  granted: number;
  ratePerSec: number;
  /** Milliseconds from now (database clock) until the current window ends. */
  msLeftInWindow: number;
  /** Which window the tokens belong to (epoch ms / windowMs, database clock). */
  windowIndex: number;
}

/** One app a provider asked to back off (Retry-After), and how long is left (database clock). */
export interface AppPauseRow {
  app: string;
  msLeft: number;
}

/**
 * Budgets set by operators, and the atomic lease of window slices pushers make against them;
 * plus the providers' Retry-After pauses per app, which every pusher of the platform honours.
 */
export interface RateLimitRepository {
  /** Create or change a budget; pushers pick it up at their next lease. */
  set(key: RateLimitKey, ratePerSec: number): Promise<void>;
  /** Remove a budget; true if there was one. */
  remove(key: RateLimitKey): Promise<boolean>;
  list(): Promise<RateLimitRow[]>;
  /**
   * Take up to `want` tokens of the current window (windowMs long, windows aligned to the
   * database clock). One UPDATE … RETURNING: concurrent callers never get more than the
   * window's share of the budget in total. undefined: no budget is set for this key.
   */
  lease(key: RateLimitKey, want: number, windowMs: number): Promise<RateLimitGrant | undefined>;
  /** Pause the app on the platform until at least `ms` from now (database clock); a later pause already stored stays. */
  pause(key: { platform: LimitedChannel; app: string }, ms: number): Promise<void>;
  /** The platform's pauses that have not ended yet. */
  pauses(platform: LimitedChannel): Promise<AppPauseRow[]>;
}

export function createRateLimitRepository(db: Kysely<HeraldTables>): RateLimitRepository {
  return {
    async set(key, ratePerSec) {
      await db
        .insertInto('rate_limits')
        .values({ platform: key.platform, app: key.app ?? '', rate_per_sec: ratePerSec })
        .onConflict((oc) => oc.columns(['platform', 'app']).doUpdateSet({ rate_per_sec: ratePerSec, updated_at: sql`now()` }))
        .execute();
    },
    async remove(key) {
      const result = await db.deleteFrom('rate_limits').where('platform', '=', key.platform).where('app', '=', key.app ?? '').executeTakeFirst();
      return result.numDeletedRows > 0n;
    },
    async list() {
      const rows = await db.selectFrom('rate_limits').select(['platform', 'app', 'rate_per_sec', 'updated_at']).orderBy('platform').orderBy('app').execute();
      return rows.map((r) => ({ platform: r.platform, app: r.app, ratePerSec: r.rate_per_sec, updatedAt: r.updated_at }));
    },
    lease: (key, want, windowMs) => leaseSlice(db, key, want, windowMs),
    async pause(key, ms) {
      const until = sql<Date>`clock_timestamp() + ${Math.max(0, Math.ceil(ms))} * interval '1 millisecond'`;
      // A row per app and Web Push service: those that ended a day ago go when a new one comes.
      await db.deleteFrom('provider_pauses').where('paused_until', '<', sql<Date>`clock_timestamp() - interval '1 day'`).execute();
      await db
        .insertInto('provider_pauses')
        .values({ platform: key.platform, app: key.app, paused_until: until })
        .onConflict((oc) =>
          oc.columns(['platform', 'app']).doUpdateSet({ paused_until: sql`greatest(provider_pauses.paused_until, excluded.paused_until)`, updated_at: sql`now()` }),
        )
        .execute();
    },
    async pauses(platform) {
      const msLeft = sql<number>`(extract(epoch from paused_until - clock_timestamp()) * 1000)::float8`;
      const rows = await db
        .selectFrom('provider_pauses')
        .select(['app', msLeft.as('ms_left')])
        .where('platform', '=', platform)
        .where('paused_until', '>', sql<Date>`clock_timestamp()`)
        .execute();
      return rows.map((r) => ({ app: r.app, msLeft: Math.max(0, Number(r.ms_left)) }));
    },
  };
}

/**
 * How far behind a budget's window a lease's clock reading may be and still be a caller that
 * waited for the row lock: further behind, the database's clock stepped back (leaseSlice).
 */
const CLOCK_STEP_BACK_MS = 1_000;

/**
 * The window's share is floor((w+1)·rate·windowMs/1000) − floor(w·rate·windowMs/1000), so the
 * windows of any second add up to the rate exactly, even when rate/window is fractional. One
 * lease also gets at most ⌈share · msLeft / windowMs⌉: a pusher that starts (or wakes) late in
 * a window cannot take the window's whole share to spend in its last milliseconds, just before
 * the next window's. A caller whose clock reading is older than the row's window (it waited for
 * the row lock across a window boundary) gets nothing and simply asks again. One older by more
 * than CLOCK_STEP_BACK_MS, by its clock read before the lock and again after it, is no such caller:
 * the database's clock stepped back (an NTP step, a standby whose clock is behind promoted), and the
 * row restarts at the caller's window; kept, every budget on the database granted nothing until
 * the clock caught up, `herald limits set` included. (A lease that waited longer than that for the
 * lock, a client having given up on it, is behind by its first reading only: nothing, as before.)
 */
async function leaseSlice(db: Kysely<HeraldTables>, key: RateLimitKey, want: number, windowMs: number): Promise<RateLimitGrant | undefined> {
  // Behind by the clock read before any wait for the row lock (c), and by the clock read after it:
  // a caller that only waited (while later leases went ahead of it) is behind by the first alone.
  const lag = Math.max(2, Math.ceil(CLOCK_STEP_BACK_MS / windowMs));
  const stepped = sql`(c.idx < r.window_index - ${lag} and floor(extract(epoch from clock_timestamp()) * 1000 / ${windowMs})::bigint < r.window_index - ${lag})`;
  const behind = sql`(c.idx < r.window_index and not ${stepped})`;
  const used = sql`case when r.window_index = c.idx then r.granted else 0 end`;
  const share = sql`(floor((c.idx + 1)::numeric * r.rate_per_sec * ${windowMs} / 1000) - floor(c.idx::numeric * r.rate_per_sec * ${windowMs} / 1000))`;
  const timeLeft = sql`ceil(${share} * ((c.idx + 1) * ${windowMs} - c.ms) / ${windowMs})::integer`;
  const grant = sql`case when ${behind} then 0 else greatest(0, least(${want}::integer, ${share}::integer - ${used}, ${timeLeft})) end`;
  const { rows } = await sql<{ last_grant: number; rate_per_sec: number; ms_left: number; idx: string }>`
    update rate_limits r
    set granted = case when ${behind} then r.granted else ${used} + ${grant} end,
        last_grant = ${grant},
        window_index = case when ${stepped} then c.idx else greatest(r.window_index, c.idx) end
    from (select floor(t.ms / ${windowMs})::bigint as idx, t.ms
          from (select extract(epoch from clock_timestamp()) * 1000 as ms) t) c
    where r.platform = ${key.platform} and r.app = ${key.app ?? ''}
    returning r.last_grant, r.rate_per_sec, ((c.idx + 1) * ${windowMs} - c.ms)::float8 as ms_left, c.idx`.execute(db);
  const row = rows[0];
  if (row === undefined) return undefined;
  return { granted: row.last_grant, ratePerSec: row.rate_per_sec, msLeftInWindow: Math.max(0, row.ms_left), windowIndex: Number(row.idx) };
}
