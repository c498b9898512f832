import type { LimitedChannel } from '@herald/contracts';

/** A budget: one platform, or one app on one platform (app '' or absent: the whole platform). */
export interface BudgetKey {
  platform: LimitedChannel;
  app?: string;
}

/** Tokens leased for the current window only, which window that is, and how long it still lasts. */
export interface Grant {
  granted: number;
  ratePerSec: number;
  msLeftInWindow: number;
  /** The window the tokens belong to (the store's clock, epoch ms / windowMs). */
  windowIndex: number;
}

export interface ConfiguredLimit {
  platform: LimitedChannel;
  /** '' for the platform-wide budget. */
  app: string;
  ratePerSec: number;
}

/** One app the fleet holds back on one platform, and for how much longer (the store's clock). */
export interface AppPause {
  app: string;
  msLeft: number;
}

/**
 * Where the fleet's shared budgets live (PostgreSQL in production: @herald/db's rateLimits).
 * `lease` must be atomic: however many processes call it at once, the grants of one window
 * add up to at most that window's share of the budget, and one lease made msLeft before the
 * window ends gets at most ⌈share · msLeft / windowMs⌉ (a late lease gets a late share).
 * The same store carries the providers' Retry-After pauses per (platform, app), so every pusher
 * of the platform holds a paused app back (docs/adr/0006-provider-back-off.md).
 */
export interface RateLimitStore {
  lease(key: BudgetKey, want: number, windowMs: number): Promise<Grant | undefined>;
  list(): Promise<ConfiguredLimit[]>;
  /**
   * Hold `app` back on `platform` fleet-wide for at least `ms` from now (the store's clock, so
   * pushers' clocks need not agree); a longer pause already stored is kept.
   */
  pause(key: { platform: LimitedChannel; app: string }, ms: number): Promise<void>;
  /** The pauses still running on `platform`. */
  pauses(platform: LimitedChannel): Promise<AppPause[]>;
}
