import type { LimitedChannel } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import { within, type Registry } from '@herald/runtime';
import { abortableWait } from './abortable-wait.ts';
import type { BackPressureOptions } from './back-pressure.ts';
import { createLimiterMetrics, type LimiterMetrics } from './limiter-metrics.ts';
import { ProviderBackOff, senderKey } from './provider-back-off.ts';
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
  /** Most tokens one lease takes. Default 1000 (a window's share caps it too). */
  maxSlice?: number;
  /** How often the configured limits and the fleet's app pauses are re-read. Default 1000 ms. */
  refreshMs?: number;
  /** Longest an acquire waits before giving up (the caller defers the push). Default 20 s. */
  maxWaitMs?: number;
  /** A lease the store has not answered within this long fails, and another is made. Default 5 s. */
  leaseTimeoutMs?: number;
  /**
   * The longest the caller can defer a push (its largest delay queue; default 10 min). A push of an
   * app over its own budget whose turn would come later is told this and books no turn: it comes
   * back then and asks again. Booked past it, turns ran away: each push deferred only that far came
   * back early, was refused and booked again at the end, and the app got a fraction of its budget.
   */
  maxTurnMs?: number;
  backPressure?: BackPressureOptions;
  /**
   * The limiter's clock, in ms; by default a monotonic one (performance.now). Only its differences
   * are read: the store answers in durations (a lease's time left in its window, a pause's ms
   * left), so the host's wall clock stepping back (an NTP step, a VM resumed) neither stalls a
   * binding budget's leases nor stretches a Retry-After pause by the step.
   */
  now?: () => number;
}

/**
 * Why a push was refused at once and booked a turn: `budget`, its app's own budget has more waiting
 * than it serves within APP_WAIT_MS; `slowed`, a throttle without Retry-After (FCM QUOTA_EXCEEDED)
 * slowed its app down in this process and that rate has more waiting than it serves within it.
 */
export type TurnCause = 'budget' | 'slowed';

export interface RateLimiter {
  /**
   * Wait for n tokens of the platform's (and the app's, if it has one) budget; false: not within
   * the wait bound, or aborted, or (at once, without waiting) the app is paused (see pausedFor),
   * or its own budget, or the rate a throttle slowed it to, has more waiting than it serves within
   * APP_WAIT_MS: then `booked` is told in how many ms this push's turn comes, at the app's rate
   * after those refused before it, and why. `service`: for Web Push, the push's push service (its
   * endpoint's host): pauses and slowdowns are that service's (provider-back-off.ts), budgets the app's.
   */
  acquire(n: number, signal?: AbortSignal, app?: string, booked?: (turnInMs: number, cause: TurnCause) => void, service?: string): Promise<boolean>;
  /** Feed every provider answer with its push's app (and push service): a Retry-After pauses the app fleet-wide, throttles slow down (provider-back-off.ts). */
  observe(answer: ProviderAnswer, app: string, service?: string): void;
  /** ms until the app (at that push service) may send again after a provider's Retry-After (here or in another pusher); 0: not paused. */
  pausedFor(app: string, service?: string): number;

  /** Stop refreshing; every waiting acquire resolves false. */
  close(): void;
}

/** How long a lease, or a refresh of the limits, may go unanswered before it is given up. */
const DEFAULT_LEASE_TIMEOUT_MS = 5_000;

/** How long the pushes an app's own budget (or its slowed-down rate) holds back may wait for it in a process (see overBooked). */
export const APP_WAIT_MS = 250;

/**
 * Build a limiter for one platform and read the configured limits once before returning. It
 * rejects if those cannot be read: a pusher that started without them would send unpaced.
 */
export async function createRateLimiter(options: RateLimiterOptions): Promise<RateLimiter> {
  const limiter = new FleetRateLimiter(options);
  await limiter.refresh(true);
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
  /** Per app over its own budget: when the last push refused for it may go (this process's clock). */
  private readonly turns = new Map<string, number>();
  /** Per sender (senderKey): its pushes waiting here for the pace a throttle slowed this process down to. */
  private readonly pacingWaiting = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: RateLimiterOptions) {
    this.now = options.now ?? (() => performance.now());
    this.metrics = createLimiterMetrics(options.registry);
    const { platform, store, logger } = options;
    this.backOff = new ProviderBackOff({ platform, store, logger, metrics: this.metrics, options: options.backPressure ?? {}, now: this.now });
    this.metrics.backoffFactor.set({ platform: options.platform }, 1);
  }

  async acquire(n: number, signal?: AbortSignal, app?: string, booked?: (turnInMs: number, cause: TurnCause) => void, service?: string): Promise<boolean> {
    // Pauses and slowdowns hold back the sender (the app, at its push service for Web Push); budgets are the app's.
    const sender = app === undefined ? undefined : senderKey(app, service);
    // A paused app's pushes are not held here (they would fill the prefetch and stall other
    // apps): the caller defers them until the pause ends.
    if (this.paused(sender, app)) return false;
    // Nor more of an app's pushes than its own budget serves within APP_WAIT_MS: a broadcast of
    // an app limited to 100/s filled every pusher's window with pushes waiting for that app's
    // budget, and the whole platform went at 100/s, every other app's pushes queued behind it.
    // The rest are refused at once, each booked a turn at the app's rate (told to `booked`).
    // Likewise the rate a throttle slowed the app down to (FCM QUOTA_EXCEEDED without Retry-After):
    // held, a broadcasting app's pushes waited here up to half a lease and took the pusher's slots.
    const turn = this.overBooked(n, app, sender);
    if (turn !== undefined) {
      booked?.(turn.turnInMs, turn.cause);
      return false;
    }
    const started = this.now();
    this.backOff.wanted(n, sender, started, service);
    const deadline = started + (this.options.maxWaitMs ?? 20_000);
    let waited = false;
    if (this.backOff.delayFor(n, sender, started, service) > 0) {
      waited = true;
      if (!(await this.waitForPacing(n, sender, deadline, signal, service))) return this.waited(started, false);
    }
    for (const budget of this.budgetsFor(app)) {
      if (budget.tryTake(n)) continue;
      waited = true;
      if (!(await budget.take(n, deadline, signal))) return this.waited(started, false);
    }
    if (waited) {
      this.waited(started, true);
      if (this.paused(sender, app)) return false; // a pause began while this push waited
    }
    this.backOff.sent(n, sender, this.now(), service);
    this.metrics.spent.inc({ platform: this.options.platform }, n);
    return true;
  }

  observe(answer: ProviderAnswer, app: string, service?: string): void {
    this.backOff.observe(answer, senderKey(app, service), service);
  }

  pausedFor(app: string, service?: string): number {
    return this.backOff.pausedFor(senderKey(app, service));
  }

  /**
   * When the app's rate (its own budget, or the rate a throttle slowed it down to here, whichever
   * is lower) has more waiting than it serves within APP_WAIT_MS: the push's turn, in ms from now,
   * the next at that rate after those waiting and those refused before it (it is refused, and
   * counted), and which rate it was. Undefined: the push may wait.
   */
  private overBooked(n: number, app: string | undefined, sender = app): { turnInMs: number; cause: TurnCause } | undefined {
    if (app === undefined || app === '' || sender === undefined) return undefined;
    const budget = this.budgets.get(app);
    const budgetRate = budget !== undefined && budget.ratePerSec > 0 ? budget.ratePerSec : Number.POSITIVE_INFINITY;
    const now = this.now();
    const slowdown = this.backOff.appSlowdown(sender, now);
    const slowedRate = slowdown?.ratePerSec ?? Number.POSITIVE_INFINITY;
    const rate = Math.min(budgetRate, slowedRate);
    if (rate === Number.POSITIVE_INFINITY) return undefined;
    const waiting = (budget?.waiting() ?? 0) + (this.pacingWaiting.get(sender) ?? 0);
    if (waiting + n <= Math.max(1, (rate * APP_WAIT_MS) / 1000)) return undefined;
    const cause: TurnCause = slowedRate < budgetRate ? 'slowed' : 'budget';
    // Turns at the app's budget are the app's; at a slowed rate, the sender's (one push service's, for Web Push).
    const turnsOf = cause === 'budget' ? app : sender;
    // Turns start after the pushes waiting here, whose tokens come first.
    const turn = Math.max(now + (waiting * 1000) / rate, this.turns.get(turnsOf) ?? 0) + (n * 1000) / rate;
    (cause === 'slowed' ? this.metrics.appSlowed : this.metrics.overBudget).inc({ platform: this.options.platform, app });
    // No turn is booked past the slowdown's end either: the rate is back to full then.
    const longest = this.longestTurnMs();
    const horizonMs = cause === 'slowed' ? Math.min(longest, Math.max(1, slowdown?.endsInMs ?? longest)) : longest;
    if (turn - now > horizonMs) return { turnInMs: horizonMs, cause };
    this.turns.set(turnsOf, turn);
    return { turnInMs: turn - now, cause };
  }

  /** The furthest ahead a turn is booked (maxTurnMs). */
  private longestTurnMs(): number {
    return this.options.maxTurnMs ?? 600_000;
  }

  /**
   * The app's budget went from `from` to `to` pushes/s (0: none): its turns are booked again at the
   * rate that binds now, so its next pushes are paced by it at once. Raised (or removed), they start
   * from now again: kept, a push refused after a raise from 10/s to 200/s was told its turn came after
   * every turn booked at 10/s, up to maxTurnMs (10 min) away, and the app trickled on at 10/s that
   * long. Lowered, what is booked ahead is stretched to the new rate (never past maxTurnMs). Pushes
   * already deferred come back at the turn they were told and ask again then.
   */
  private rebook(app: string, from: number, to: number): void {
    const turn = this.turns.get(app);
    if (turn === undefined) return;
    const now = this.now();
    // For APNs and FCM an app's turns are also those a throttle's slowdown books (its senderKey is the app).
    const slowed = this.backOff.appSlowdown(app, now)?.ratePerSec ?? Number.POSITIVE_INFINITY;
    const rateOf = (budget: number): number => Math.min(budget > 0 ? budget : Number.POSITIVE_INFINITY, slowed);
    const [before, after] = [rateOf(from), rateOf(to)];
    if (after === before) return;
    if (!Number.isFinite(before) || after > before || turn <= now) this.turns.delete(app);
    else this.turns.set(app, now + Math.min(this.longestTurnMs(), ((turn - now) * before) / after));
  }

  close(): void {
    clearInterval(this.timer);
    this.closed.abort();
  }

  /**
   * Re-read the configured limits (budgets appear, change and disappear within refreshMs) and the
   * fleet's pauses. A failed read keeps the last known ones; at `start` there are none, so it throws.
   */
  async refresh(start = false): Promise<void> {
    await Promise.all([this.refreshLimits(start), this.refreshPauses()]);
  }

  private async refreshPauses(): Promise<void> {
    try {
      await this.backOff.learn();
    } catch (err) {
      this.options.logger.error({ err }, 'could not read the fleet\'s provider pauses; keeping the last known ones');
    }
  }

  private async refreshLimits(start: boolean): Promise<void> {
    let limits: ConfiguredLimit[];
    try {
      limits = (await this.options.store.list()).filter((l) => l.platform === this.options.platform);
    } catch (err) {
      if (start) throw new Error(`could not read the rate limits: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      this.options.logger.error({ err }, 'could not read rate limits; keeping the last known ones');
      return;
    }
    const seen = new Set(limits.map((l) => l.app));
    for (const [app, budget] of this.budgets) {
      if (seen.has(app)) continue;
      this.budgets.delete(app);
      this.rebook(app, budget.ratePerSec, 0);
      this.metrics.budget.remove({ platform: this.options.platform, app: app === '' ? '*' : app });
    }
    for (const limit of limits) this.ensureBudget(limit);
    this.metrics.backoffFactor.set({ platform: this.options.platform }, this.backOff.factor(this.now()));
  }

  startRefreshing(): void {
    // One refresh at a time, so reads the store does not answer do not pile up one a tick; and one
    // unanswered for a lease's timeout is left behind, so a hung read does not stop every refresh.
    const giveUpMs = this.options.leaseTimeoutMs ?? DEFAULT_LEASE_TIMEOUT_MS;
    let refreshing: Promise<unknown> | undefined;
    this.timer = setInterval(() => {
      refreshing ??= within(this.refresh(), giveUpMs).finally(() => (refreshing = undefined));
    }, this.options.refreshMs ?? 1000);
    this.timer.unref();
  }

  private ensureBudget(limit: ConfiguredLimit): void {
    this.metrics.budget.set({ platform: limit.platform, app: limit.app === '' ? '*' : limit.app }, limit.ratePerSec);
    const existing = this.budgets.get(limit.app);
    if (existing?.ratePerSec !== limit.ratePerSec) this.rebook(limit.app, existing?.ratePerSec ?? 0, limit.ratePerSec);
    if (existing !== undefined) {
      existing.ratePerSec = limit.ratePerSec;
      return existing.revive();
    }
    const budgetOptions = { windowMs: this.options.windowMs ?? 100, maxSlice: this.options.maxSlice ?? 1000, errorBackoffMs: 500, leaseTimeoutMs: this.options.leaseTimeoutMs ?? DEFAULT_LEASE_TIMEOUT_MS, now: this.now };
    const key = { platform: limit.platform, ...(limit.app !== '' && { app: limit.app }) };
    const budget = new SharedBudget(key, this.options.store, budgetOptions, this.options.logger, this.closed.signal);
    budget.ratePerSec = limit.ratePerSec;
    this.budgets.set(limit.app, budget);
  }

  /** The app's budget (if it has one) first, then the platform's. */
  private budgetsFor(app: string | undefined): SharedBudget[] {
    if (this.budgets.size === 0) return [];
    const appBudget = app === undefined || app === '' ? undefined : this.budgets.get(app);
    const platformBudget = this.budgets.get('');
    return [appBudget, platformBudget].filter((b): b is SharedBudget => b !== undefined);
  }

  /** A paused sender's push is refused (and counted, by its app): the caller defers it. */
  private paused(sender: string | undefined, app: string | undefined): boolean {
    if (sender === undefined || this.backOff.pausedFor(sender) === 0) return false;
    this.metrics.held.inc({ platform: this.options.platform, app: app ?? '' });
    return true;
  }

  private async waitForPacing(n: number, sender: string | undefined, deadline: number, signal: AbortSignal | undefined, service?: string): Promise<boolean> {
    if (sender === undefined) return this.paced(n, sender, deadline, signal, service);
    this.pacingWaiting.set(sender, (this.pacingWaiting.get(sender) ?? 0) + n);
    try {
      return await this.paced(n, sender, deadline, signal, service);
    } finally {
      const left = (this.pacingWaiting.get(sender) ?? n) - n;
      if (left > 0) this.pacingWaiting.set(sender, left);
      else this.pacingWaiting.delete(sender);
    }
  }

  private async paced(n: number, sender: string | undefined, deadline: number, signal: AbortSignal | undefined, service?: string): Promise<boolean> {
    for (let delay = this.backOff.delayFor(n, sender, this.now(), service); delay > 0; delay = this.backOff.delayFor(n, sender, this.now(), service)) {
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
