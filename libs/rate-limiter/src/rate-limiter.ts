import type { LimitedChannel } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import type { Registry } from '@herald/runtime';
import { abortableWait } from './abortable-wait.ts';
import { BackPressure, isThrottle, type BackPressureOptions, type ProviderAnswer } from './back-pressure.ts';
import { createLimiterMetrics, type LimiterMetrics } from './limiter-metrics.ts';
import type { ConfiguredLimit, RateLimitStore } from './rate-limit-store.ts';
import { SharedBudget } from './shared-budget.ts';

export interface RateLimiterOptions {
  platform: LimitedChannel;
  store: RateLimitStore;
  logger: Logger;
  registry: Registry;
  /** Window length; every process of the fleet must use the same. Default 100 ms. */
  windowMs?: number;
  /** Most tokens one lease takes. Default 200 (a window's share caps it too). */
  maxSlice?: number;
  /** How often the configured limits are re-read (new or removed limits take effect). Default 1000 ms. */
  refreshMs?: number;
  /** Longest an acquire waits before giving up (the caller defers the push). Default 20 s. */
  maxWaitMs?: number;
  backPressure?: BackPressureOptions;
  now?: () => number;
}

export interface RateLimiter {
  /** Wait for n tokens of the platform's (and the app's, if it has one) budget; false: not within the wait bound, or aborted. */
  acquire(n: number, signal?: AbortSignal, app?: string): Promise<boolean>;
  /** Feed every provider answer: throttles slow this process down, retry-after pauses it. */
  observe(answer: ProviderAnswer): void;
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
 * Fleet-wide budgets (leased in slices from the store, spent locally) plus this process's own
 * reaction to provider push-back. With no limit configured and no push-back, acquire never waits
 * and never touches the network.
 */
class FleetRateLimiter implements RateLimiter {
  private readonly now: () => number;
  private readonly metrics: LimiterMetrics;
  private readonly closed = new AbortController();
  private readonly budgets = new Map<string, SharedBudget>();
  private readonly backPressure: BackPressure;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: RateLimiterOptions) {
    this.now = options.now ?? Date.now;
    this.metrics = createLimiterMetrics(options.registry);
    this.backPressure = new BackPressure(options.backPressure ?? {}, this.now());
    this.metrics.backoffFactor.set({ platform: options.platform }, 1);
  }

  async acquire(n: number, signal?: AbortSignal, app?: string): Promise<boolean> {
    const started = this.now();
    const deadline = started + (this.options.maxWaitMs ?? 20_000);
    let waited = false;
    if (this.backPressure.delayFor(n, started) > 0) {
      waited = true;
      if (!(await this.waitForPacing(n, deadline, signal))) return this.waited(started, false);
    }
    for (const budget of this.budgetsFor(app)) {
      if (budget.tryTake(n)) continue;
      waited = true;
      if (!(await budget.take(n, deadline, signal))) return this.waited(started, false);
    }
    if (waited) this.waited(started, true);
    this.backPressure.sent(n, this.now());
    this.metrics.spent.inc({ platform: this.options.platform }, n);
    return true;
  }

  observe(answer: ProviderAnswer): void {
    const now = this.now();
    if (!this.backPressure.observe(answer, now)) return;
    const factor = this.backPressure.factor(now);
    this.metrics.backoffFactor.set({ platform: this.options.platform }, factor);
    if (isThrottle(answer)) this.options.logger.warn({ reason: answer.reason, retryAfterMs: answer.retryAfterMs, factor }, 'provider throttled: slowing down');
  }

  close(): void {
    clearInterval(this.timer);
    this.closed.abort();
  }

  /** Re-read the configured limits: budgets appear, change and disappear within refreshMs. */
  async refresh(): Promise<void> {
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
    this.metrics.backoffFactor.set({ platform: this.options.platform }, this.backPressure.factor(this.now()));
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

  private async waitForPacing(n: number, deadline: number, signal: AbortSignal | undefined): Promise<boolean> {
    for (let delay = this.backPressure.delayFor(n, this.now()); delay > 0; delay = this.backPressure.delayFor(n, this.now())) {
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
