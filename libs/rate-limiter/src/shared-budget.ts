import type { Logger } from '@herald/logging';
import { TIMED_OUT, within } from '@herald/runtime';
import { abortRegistry } from './abort-registry.ts';
import { abortableWait } from './abortable-wait.ts';
import type { BudgetKey, Grant, RateLimitStore } from './rate-limit-store.ts';
import { ReleaseSchedule } from './release-schedule.ts';

export interface SharedBudgetOptions {
  windowMs: number;
  /** At most this many tokens per lease (the "slice"; a window's share caps it too). */
  maxSlice: number;
  /** After a failed lease (store unreachable), wait this long before the next attempt. */
  errorBackoffMs: number;
  /**
   * A lease the store has not answered within this long fails (and its grant, if it ever comes,
   * is not used): a connection that hangs must not hold the budget's one lease in flight.
   */
  leaseTimeoutMs: number;
  now: () => number;
}

interface Waiter {
  remaining: number;
  done(ok: boolean): void;
}

/**
 * One budget shared with the fleet: leases slices of the current window from the store and
 * hands them out locally. Tokens are good only until their window ends, so the fleet never
 * spends more in a window than the window's share. When the budget binds (a lease got less than
 * it asked for), the grant is released evenly over the rest of the window rather than at once.
 * Waiters are served first come, first served.
 */
export class SharedBudget {
  private ready = 0;
  private expiresAt = 0;
  /** When the window of the last grant ends (local clock). */
  private windowEnd = 0;
  /** The store's index of the window of the last grant; tokens in hand belong to it. */
  private windowIndex: number | undefined;
  /** Tokens handed out so far (to tell an idle budget from a busy one). */
  private taken = 0;
  private rollover: NodeJS.Timeout | undefined;
  private readonly schedule = new ReleaseSchedule();
  /** The window's share is spent: no lease before this time. */
  private exhaustedUntil = 0;
  private waiters: Waiter[] = [];
  private pumping = false;
  /** The last lease got all it asked for: the budget is not binding, so lease ahead. */
  private ahead = false;
  /** The store said there is no such budget (removed since the last refresh): pass everything. */
  private gone = false;
  /** The lease in flight, if any: there is never more than one per budget and process. */
  private inflight: Promise<number> | undefined;
  /** The configured fleet-wide rate, pushes/s (refreshed with the limits). */
  ratePerSec = 0;

  constructor(
    readonly key: BudgetKey,
    private readonly store: RateLimitStore,
    private readonly options: SharedBudgetOptions,
    private readonly logger: Logger,
    private readonly closed: AbortSignal,
  ) {}

  /** Fast path: no waiting, no network. */
  tryTake(n: number): boolean {
    if (this.gone) return true;
    if (this.waiters.length > 0) return false;
    this.refill(this.options.now());
    if (this.ready < n) return false;
    this.ready -= n;
    this.taken += n;
    // Not binding: keep up to two slices in hand, leasing the next one while a whole slice is
    // still left, so the hot path rarely waits for a lease's round trip.
    if (this.ahead && this.ready < this.options.maxSlice && this.inflight === undefined) void this.leaseOnce();
    return true;
  }

  /** Wait (bounded by deadline, cut short by signal) for n tokens; false if they did not come. */
  take(n: number, deadline: number, signal?: AbortSignal): Promise<boolean> {
    if (this.tryTake(n)) return Promise.resolve(true);
    if (signal?.aborted === true || this.closed.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const finish = (ok: boolean): void => {
        clearTimeout(timer);
        cancels.forEach((cancel) => cancel());
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(ok);
      };
      const waiter: Waiter = { remaining: n, done: finish };
      const timer = setTimeout(() => finish(false), Math.max(0, deadline - this.options.now()));
      const cancels = [signal, this.closed].filter((s) => s !== undefined).map((s) => abortRegistry.on(s, () => finish(false)));
      this.waiters.push(waiter);
      void this.pump();
    });
  }

  /** Tokens asked for by acquires waiting here. */
  waiting(): number {
    return this.waiters.reduce((sum, w) => sum + w.remaining, 0);
  }

  /** The budget exists again (or still): lease from now on. */
  revive(): void {
    this.gone = false;
  }

  /** Serve waiters until none is left: from released tokens, else by leasing, else by waiting. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.waiters.length > 0 && !this.closed.aborted) {
        this.serve();
        if (this.waiters.length === 0) break;
        const waitMs = await this.nextStep();
        if (waitMs > 0) await abortableWait(waitMs, this.closed);
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Lease if this window may still have budget; returns how long to wait before trying again. */
  private async nextStep(): Promise<number> {
    const now = this.options.now();
    if (this.schedule.pending() > 0) return Math.max(1, this.schedule.nextAt() - now);
    if (now < this.exhaustedUntil) return this.exhaustedUntil - now;
    return this.leaseOnce();
  }

  private leaseOnce(): Promise<number> {
    this.inflight ??= this.lease().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async lease(): Promise<number> {
    const demand = this.waiting();
    const want = Math.min(this.options.maxSlice, this.ahead ? Math.max(demand, this.options.maxSlice) : demand);
    const sentAt = this.options.now();
    try {
      const grant = await within(this.store.lease(this.key, want, this.options.windowMs), this.options.leaseTimeoutMs);
      if (grant === TIMED_OUT) throw new Error(`no answer from the rate limit store within ${this.options.leaseTimeoutMs} ms`);
      this.gone = grant === undefined;
      if (grant !== undefined) this.accept(grant, want, sentAt);
      return 0;
    } catch (err) {
      this.logger.error({ err, key: this.key }, 'rate limit lease failed; pushes wait');
      return this.options.errorBackoffMs;
    }
  }

  /**
   * A full grant is ready at once; a partial one (the budget binds) is released evenly over the
   * first 75% of what is left of the window, leaving slack for late timers. Released tokens stay
   * good for a quarter window after it ends (a busy event loop must not waste budget); that
   * spill is less than one window's share, within the "budget + one slice" bound. Tokens left
   * from an earlier window never carry over into a new window's grant (the store names each
   * grant's window). The window's end is reckoned from when the lease was sent: the store
   * measured what was left of it after that, so the answer's way back and a busy event loop
   * cannot stretch the window here.
   */
  private accept(grant: Grant, want: number, sentAt: number): void {
    const { granted, msLeftInWindow: msLeft } = grant;
    const now = this.options.now();
    this.refill(now);
    if (grant.windowIndex !== this.windowIndex) {
      this.ready = 0;
      this.schedule.clear();
    }
    this.windowIndex = grant.windowIndex;
    this.windowEnd = sentAt + msLeft;
    this.expiresAt = this.windowEnd + this.options.windowMs / 4;
    const left = Math.max(0, this.windowEnd - now);
    this.ahead = granted >= want;
    if (this.ahead) {
      this.ready += granted;
      this.leaseAtRollover(left);
      return;
    }
    this.exhaustedUntil = this.windowEnd;
    this.schedule.reset(granted, now, now + left * 0.75);
  }

  /**
   * Not binding and busy: lease the next window's first slice as soon as it starts, while this
   * window's tokens are still good (the grace), so the hot path does not stall at every window.
   */
  private leaseAtRollover(msLeft: number): void {
    if (this.rollover !== undefined) return;
    const takenBefore = this.taken;
    this.rollover = setTimeout(() => {
      this.rollover = undefined;
      const busy = this.taken !== takenBefore;
      if (busy && this.ahead && !this.closed.aborted && this.inflight === undefined) void this.leaseOnce();
    }, msLeft + 1);
    this.rollover.unref();
  }

  /** Move released tokens to ready; a token past its window's grace is worthless. */
  private refill(now: number): void {
    if (now < this.expiresAt) {
      this.ready += this.schedule.take(now);
      return;
    }
    this.ready = 0;
    this.schedule.clear();
  }

  private serve(): void {
    if (this.gone) {
      for (const w of [...this.waiters]) w.done(true);
      return;
    }
    this.refill(this.options.now());
    while (this.ready > 0) {
      const head = this.waiters[0];
      if (head === undefined) return;
      const taken = Math.min(head.remaining, this.ready);
      head.remaining -= taken;
      this.ready -= taken;
      this.taken += taken;
      if (head.remaining === 0) head.done(true);
    }
  }
}
