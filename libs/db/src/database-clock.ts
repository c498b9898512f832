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
  stop(): void;
}

/** An offset larger than this is logged: the host's clock is off, and anything that decides by it alone is too. */
const SKEW_WARN_MS = 1_000;

export async function startDatabaseClock<DB>(
  db: Kysely<DB>,
  options: { logger?: Logger; refreshMs?: number; processNow?: () => number } = {},
): Promise<DatabaseClock> {
  const processNow = options.processNow ?? Date.now;
  let offset = 0;
  let warned = false;
  const measure = async (): Promise<void> => {
    const sent = processNow();
    const { rows } = await sql<{ ms: number }>`select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms`.execute(db);
    const answered = processNow();
    const server = rows[0]?.ms;
    if (server === undefined) return;
    offset = server - (sent + answered) / 2;
    if (Math.abs(offset) > SKEW_WARN_MS && !warned) {
      warned = true;
      options.logger?.warn({ offsetMs: Math.round(offset) }, "this host's clock differs from PostgreSQL's: stored pushes are released by PostgreSQL's");
    }
  };
  // A database out of reach keeps the last offset (none yet: the process's own clock).
  await measure().catch(() => undefined);
  const timer = setInterval(() => void measure().catch(() => undefined), options.refreshMs ?? 60_000);
  timer.unref();
  return {
    now: () => new Date(processNow() + offset),
    offsetMs: () => offset,
    stop: () => clearInterval(timer),
  };
}
