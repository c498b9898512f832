import type { LimitedChannel } from '@herald/contracts';
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
