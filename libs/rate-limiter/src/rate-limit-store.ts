import type { LimitedChannel } from '@herald/contracts';

/** A budget: one platform, or one app on one platform (app '' or absent: the whole platform). */
export interface BudgetKey {
  platform: LimitedChannel;
  app?: string;
}

/** Tokens leased for the current window only, and how long that window still lasts. */
export interface Grant {
  granted: number;
  ratePerSec: number;
  msLeftInWindow: number;
}

export interface ConfiguredLimit {
  platform: LimitedChannel;
  /** '' for the platform-wide budget. */
  app: string;
  ratePerSec: number;
}

/**
 * Where the fleet's shared budgets live (PostgreSQL in production: @herald/db's rateLimits).
 * `lease` must be atomic: however many processes call it at once, the grants of one window
 * add up to at most that window's share of the budget, and one lease made msLeft before the
 * window ends gets at most ⌈share · msLeft / windowMs⌉ (a late lease gets a late share).
 */
export interface RateLimitStore {
  lease(key: BudgetKey, want: number, windowMs: number): Promise<Grant | undefined>;
  list(): Promise<ConfiguredLimit[]>;
}
