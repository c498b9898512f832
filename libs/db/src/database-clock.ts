import { sql, type Kysely } from 'kysely';
import type { Logger } from '@herald/logging';

/**
 * PostgreSQL's clock, read from this process: the process's own clock plus the offset last measured
 * against the server's (clock_timestamp(), less half the round trip). Every process that decides by
 * it decides by one clock: deschedulers on hosts whose clocks disagree released a stored push as
 * early as the fastest of them was ahead (a 09:00 push at 08:52 with one host 8 minutes fast), and
 * the slowest late.
 */
export interface DatabaseClock {
  now(): Date;
  /** The last offset measured, PostgreSQL's clock less this process's (ms). */
  offsetMs(): number;
  /** Settles once the first measurement was tried (until then, and if it fails, the process's own clock). */
  readonly measured: Promise<void>;
  stop(): void;
}

/** An offset larger than this is logged: the host's clock is off, and anything that decides by it alone is too. */
const SKEW_WARN_MS = 1_000;
/** Samples a measurement takes, on one connection, keeping the one with the shortest round trip. */
const SAMPLES = 3;
/** A measurement whose best round trip is longer than this is not kept: half of it could be the error. */
const MAX_ROUND_TRIP_MS = 1_000;

export function startDatabaseClock<DB>(db: Kysely<DB>, options: { logger?: Logger; refreshMs?: number; processNow?: () => number } = {}): DatabaseClock {
  const processNow = options.processNow ?? Date.now;
  let offset = 0;
  /** The offset last logged as the host's clock being off (undefined: none). */
  let warnedAt: number | undefined;
  let saidUnmeasured = false;
  const measure = async (): Promise<void> => {
    // One connection, used once before the samples: a connection's start-up (or a wait for a busy
    // pool's) inside the round trip put half of it into the offset.
    const best = await db.connection().execute(async (conn) => {
      await sql`select 1`.execute(conn);
      let kept: { roundTrip: number; offset: number } | undefined;
      for (let i = 0; i < SAMPLES; i++) {
        const sent = processNow();
        const { rows } = await sql<{ ms: number }>`select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms`.execute(conn);
        const answered = processNow();
        const server = rows[0]?.ms;
        if (server === undefined) continue;
        const sample = { roundTrip: answered - sent, offset: server - (sent + answered) / 2 };
        if (kept === undefined || sample.roundTrip < kept.roundTrip) kept = sample;
      }
      return kept;
    });
    if (best === undefined || best.roundTrip > MAX_ROUND_TRIP_MS) {
      if (!saidUnmeasured) options.logger?.warn({ roundTripMs: best?.roundTrip }, "PostgreSQL's clock could not be read within a short round trip: this host's own clock is used until it can");
      saidUnmeasured = true;
      return;
    }
    offset = best.offset;
    // Said once, and again when it moves by more than as much (a clock drifting, or set right).
    if (Math.abs(offset) > SKEW_WARN_MS && (warnedAt === undefined || Math.abs(offset - warnedAt) > SKEW_WARN_MS)) {
      warnedAt = offset;
      options.logger?.warn({ offsetMs: Math.round(offset) }, "this host's clock differs from PostgreSQL's: stored pushes are released by PostgreSQL's");
    }
  };
  // A database out of reach keeps the last offset (none yet: the process's own clock). One
  // measurement at a time: against a database that hangs they would pile up in the pool's queue.
  let inFlight: Promise<void> | undefined;
  const refresh = (): Promise<void> =>
    (inFlight ??= measure()
      .catch(() => undefined)
      .finally(() => (inFlight = undefined)));
  const measured = refresh();
  const timer = setInterval(() => void refresh(), options.refreshMs ?? 60_000);
  timer.unref();
  return {
    now: () => new Date(processNow() + offset),
    offsetMs: () => offset,
    measured,
    stop: () => clearInterval(timer),
  };
}
