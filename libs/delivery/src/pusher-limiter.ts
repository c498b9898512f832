import type { LimitedChannel } from '@herald/contracts';
import { createDatabase, databaseOptionsOf, type Database, type DatabaseSettings } from '@herald/db';
import type { Logger } from '@herald/logging';
import { createRateLimiter, type RateLimiter } from '@herald/rate-limiter';
import type { Registry } from '@herald/runtime';

export interface RateLimitSettings {
  RATE_LIMIT_ENABLED: boolean;
  RATE_LIMIT_MAX_WAIT_MS: number;
  RATE_LIMIT_MAX_SLICE: number;
  RATE_LIMIT_REFRESH_MS: number;
}

export interface PusherLimiter {
  /** Undefined when RATE_LIMIT_ENABLED is false: nothing is paced. */
  readonly limiter: RateLimiter | undefined;
  /** Stop pacing (waiting pushes give up at once) and close the lease pool. */
  close(): Promise<void>;
}

/**
 * The pusher's fleet-wide limiter (budgets from `herald limits set`, shared through PostgreSQL),
 * leasing through its own pool (openLimiterDatabase); none, and no pool, when disabled. With no
 * limit configured it never waits.
 */
export async function createPusherLimiter(
  platform: LimitedChannel,
  settings: RateLimitSettings & DatabaseSettings & { PUSHER_RETRY_DELAYS_MS: readonly number[] },
  logger: Logger,
  registry: Registry,
): Promise<PusherLimiter> {
  if (!settings.RATE_LIMIT_ENABLED) return { limiter: undefined, close: () => Promise.resolve() };
  const db = openLimiterDatabase(settings, logger);
  try {
    const limiter = await createRateLimiter({
      platform,
      store: db.rateLimits,
      logger,
      registry,
      maxWaitMs: settings.RATE_LIMIT_MAX_WAIT_MS,
      maxSlice: settings.RATE_LIMIT_MAX_SLICE,
      refreshMs: settings.RATE_LIMIT_REFRESH_MS,
      // A booked turn waits at most the schedule's longest delay: no turn is booked further ahead.
      maxTurnMs: Math.max(...settings.PUSHER_RETRY_DELAYS_MS),
    });
    return {
      limiter,
      close: async () => {
        limiter.close();
        await db.close();
      },
    };
  } catch (err) {
    await db.close();
    throw err;
  }
}

/**
 * The connection pool the limiter leases budget through. Leases are short-lived bookkeeping, so
 * they commit without waiting for the WAL flush: a lease no longer waits a disk flush (measured
 * by `npm run bench:limiter`), and a PostgreSQL crash can only forget the last fraction of a
 * second of counts, for windows that have ended. Limits themselves are set through other
 * connections, with normal commits.
 */
export function openLimiterDatabase(settings: DatabaseSettings, logger: Logger): Database {
  return createDatabase({ ...databaseOptionsOf(settings), logger, poolSize: 2, synchronousCommit: false });
}
