import type { LimitedChannel } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import type { Registry } from '@herald/runtime';
import { abortableWait } from './abortable-wait.ts';
import type { BackPressureOptions } from './back-pressure.ts';
import { createLimiterMetrics, type LimiterMetrics } from './limiter-metrics.ts';
import { ProviderBackOff } from './provider-back-off.ts';
import type { ConfiguredLimit, RateLimitStore } from './rate-limit-store.ts';
import { SharedBudget } from './shared-budget.ts';
import type { ProviderAnswer } from './throttle-scope.ts';

export interface RateLimiterOptions {
  platform: LimitedChannel;
  store: RateLimitStore;
  logger: Logger;
  registry: Registry;
  /** Window length; every process of the fleet must use the same. Default 100 ms. */
  windowMs?: number;
  /** Most tokens one lease takes. Default 200 (a window's share caps it too). */
  maxSlice?: number;
  /** How often the configured limits and the fleet's app pauses are re-read. Default 1000 ms. */
  refreshMs?: number;
  /** Longest an acquire waits before giving up (the caller defers the push). Default 20 s. */
  maxWaitMs?: number;
  backPressure?: BackPressureOptions;
  now?: () => number;
}

export interface RateLimiter {
  /**
   * Wait for n tokens of the platform's (and the app's, if it has one) budget; false: not within
   * the wait bound, or aborted, or (at once, without waiting) the app is paused: see pausedFor.
   */
  acquire(n: number, signal?: AbortSignal, app?: string): Promise<boolean>;
  /** Feed every provider answer with its push's app: a Retry-After pauses the app fleet-wide, throttles slow down (provider-back-off.ts). */
  observe(answer: ProviderAnswer, app: string): void;
  /** ms until the app may send again after a provider's Retry-After (here or in another pusher); 0: not paused. */
  pausedFor(app: string): number;
  /** Stop refreshing; every waiting acquire resolves false. */
  close(): void;
}

/** Build a limiter for one platform and read the configured limits once before returning. */
export async function createRateLimiter(options: RateLimiterOptions): Promise<RateLimiter> {
  const limiter = new FleetRateLimiter(options);
  await limiter.refresh();
  limiter.startRefreshing();
  return limiter;
}

/**
 * Fleet-wide budgets (leased in slices from the store, spent locally) plus the reaction to
 * provider push-back (provider-back-off.ts). With no limit configured and no push-back, acquire
 * never waits and never touches the network.
 */
class FleetRateLimiter implements RateLimiter {
  private readonly now: () => number;
  private readonly metrics: LimiterMetrics;
  private readonly closed = new AbortController();
  private readonly budgets = new Map<string, SharedBudget>();
  private readonly backOff: ProviderBackOff;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: RateLimiterOptions) {
    this.now = options.now ?? Date.now;
    this.metrics = createLimiterMetrics(options.registry);
    const { platform, store, logger } = options;
    this.backOff = new ProviderBackOff({ platform, store, logger, metrics: this.metrics, options: options.backPressure ?? {}, now: this.now });
    this.metrics.backoffFactor.set({ platform: options.platform }, 1);
  }

  async acquire(n: number, signal?: AbortSignal, app?: string): Promise<boolean> {
    // A paused app's pushes are not held here (they would fill the prefetch and stall other
    // apps): the caller defers them until the pause ends.
    if (this.paused(app)) return false;
    const started = this.now();
    const deadline = started + (this.options.maxWaitMs ?? 20_000);
    let waited = false;
    if (this.backOff.delayFor(n, app, started) > 0) {
      waited = true;
      if (!(await this.waitForPacing(n, app, deadline, signal))) return this.waited(started, false);
    }
    for (const budget of this.budgetsFor(app)) {
      if (budget.tryTake(n)) continue;
      waited = true;
      if (!(await budget.take(n, deadline, signal))) return this.waited(started, false);
    }
    if (waited) {
      this.waited(started, true);
      if (this.paused(app)) return false; // a pause began while this push waited
    }
    this.backOff.sent(n, app, this.now());
    this.metrics.spent.inc({ platform: this.options.platform }, n);
    return true;
  }

  observe(answer: ProviderAnswer, app: string): void {
    this.backOff.observe(answer, app);
  }

  pausedFor(app: string): number {
    return this.backOff.pausedFor(app);
  }

  close(): void {
    clearInterval(this.timer);
    this.closed.abort();
  }

  /** Re-read the configured limits (budgets appear, change and disappear within refreshMs) and the fleet's pauses. */
  async refresh(): Promise<void> {
    await Promise.all([this.refreshLimits(), this.refreshPauses()]);
  }

  private async refreshPauses(): Promise<void> {
    try {
      await this.backOff.learn();
    } catch (err) {
      this.options.logger.error({ err }, 'could not read the fleet\'s provider pauses; keeping the last known ones');
    }
  }

  private async refreshLimits(): Promise<void> {
    let limits: ConfiguredLimit[];
    try {
      limits = (await this.options.store.list()).filter((l) => l.platform === this.options.platform);
    } catch (err) {
      this.options.logger.error({ err }, 'could not read rate limits; keeping the last known ones');
      return;
    }
    const seen = new Set(limits.map((l) => l.app));
    for (const app of this.budgets.keys()) {
      if (seen.has(app)) continue;
      this.budgets.delete(app);
      this.metrics.budget.remove({ platform: this.options.platform, app: app === '' ? '*' : app });
    }
    for (const limit of limits) this.ensureBudget(limit);
    this.metrics.backoffFactor.set({ platform: this.options.platform }, this.backOff.factor(this.now()));
  }

  startRefreshing(): void {
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs ?? 1000);
    this.timer.unref();
  }

  private ensureBudget(limit: ConfiguredLimit): void {
    this.metrics.budget.set({ platform: limit.platform, app: limit.app === '' ? '*' : limit.app }, limit.ratePerSec);
    const existing = this.budgets.get(limit.app);
    if (existing !== undefined) return existing.revive();
    const budgetOptions = { windowMs: this.options.windowMs ?? 100, maxSlice: this.options.maxSlice ?? 1000, errorBackoffMs: 500, now: this.now };
    const key = { platform: limit.platform, ...(limit.app !== '' && { app: limit.app }) };
    this.budgets.set(limit.app, new SharedBudget(key, this.options.store, budgetOptions, this.options.logger, this.closed.signal));
  }

  /** The app's budget (if it has one) first, then the platform's. */
  private budgetsFor(app: string | undefined): SharedBudget[] {
    if (this.budgets.size === 0) return [];
    const appBudget = app === undefined || app === '' ? undefined : this.budgets.get(app);
    const platformBudget = this.budgets.get('');
    return [appBudget, platformBudget].filter((b): b is SharedBudget => b !== undefined);
  }

  /** A paused app's push is refused (and counted): the caller defers it. */
  private paused(app: string | undefined): boolean {
    if (app === undefined || this.backOff.pausedFor(app) === 0) return false;
    this.metrics.held.inc({ platform: this.options.platform });
    return true;
  }

  private async waitForPacing(n: number, app: string | undefined, deadline: number, signal: AbortSignal | undefined): Promise<boolean> {
    for (let delay = this.backOff.delayFor(n, app, this.now()); delay > 0; delay = this.backOff.delayFor(n, app, this.now())) {
      if (this.now() + delay > deadline || this.closed.signal.aborted) return false;
      if (!(await abortableWait(delay, signal, this.closed.signal))) return false;
    }
    return true;
  }

  private waited(started: number, ok: boolean): boolean {
    this.metrics.waitSeconds.observe({ platform: this.options.platform }, (this.now() - started) / 1000);
    return ok;
  }
}
