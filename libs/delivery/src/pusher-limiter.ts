import type { LimitedChannel } from '@herald/contracts';
import { createDatabase, type Database } from '@herald/db';
import type { Logger } from '@herald/logging';
import { createRateLimiter, type RateLimiter, type RateLimitStore } from '@herald/rate-limiter';
import type { Registry } from '@herald/runtime';

export interface RateLimitSettings {
  RATE_LIMIT_ENABLED: boolean;
  RATE_LIMIT_MAX_WAIT_MS: number;
  RATE_LIMIT_MAX_SLICE: number;
  RATE_LIMIT_REFRESH_MS: number;
}

/**
 * The pusher's fleet-wide limiter (budgets from `herald limits set`, shared through the store),
 * or undefined when disabled. With no limit configured it never waits.
 */
export async function createPusherLimiter(
  platform: LimitedChannel,
  settings: RateLimitSettings,
  store: RateLimitStore,
  logger: Logger,
  registry: Registry,
): Promise<RateLimiter | undefined> {
  if (!settings.RATE_LIMIT_ENABLED) return undefined;
  return createRateLimiter({
    platform,
    store,
    logger,
    registry,
    maxWaitMs: settings.RATE_LIMIT_MAX_WAIT_MS,
    maxSlice: settings.RATE_LIMIT_MAX_SLICE,
    refreshMs: settings.RATE_LIMIT_REFRESH_MS,
  });
}

/**
 * The connection pool the limiter leases budget through. Leases are short-lived bookkeeping, so
 * they commit without waiting for the WAL flush: a lease no longer waits a disk flush (measured
 * by `npm run bench:limiter`), and a PostgreSQL crash can only forget the last fraction of a
 * second of counts, for windows that have ended. Limits themselves are set through other
 * connections, with normal commits.
 */
export function openLimiterDatabase(settings: { DATABASE_URL: string; DATABASE_SCHEMA: string }, logger: Logger): Database {
  return createDatabase({ url: settings.DATABASE_URL, schema: settings.DATABASE_SCHEMA, logger, poolSize: 2, synchronousCommit: false });
}
