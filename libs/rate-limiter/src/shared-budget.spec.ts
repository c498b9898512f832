import { createLogger } from '@herald/logging';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Grant, RateLimitStore } from './rate-limit-store.ts';
import { SharedBudget } from './shared-budget.ts';

const logger = createLogger({ service: 'shared-budget-spec', level: 'silent', format: 'json' });

/**
 * A store answering leases from a script, each answer arriving at the time it names (the test's
 * clock jumps there): what a store whose answers come back late looks like to the budget.
 */
function scriptedStore(clock: { t: number }, answers: { at: number; grant: Grant }[]): RateLimitStore & { leases: number } {
  const store = {
    leases: 0,
    lease: (): Promise<Grant> => {
      store.leases++;
      const next = answers.shift() ?? { at: clock.t, grant: { granted: 0, ratePerSec: 100, msLeftInWindow: 1, windowIndex: Number.MAX_SAFE_INTEGER } };
      clock.t = next.at;
      return Promise.resolve(next.grant);
    },
    list: () => Promise.resolve([]),
    pause: () => Promise.resolve(),
    pauses: () => Promise.resolve([]),
  };
  return store;
}

const budgetOn = (store: RateLimitStore, clock: { t: number }): SharedBudget =>
  new SharedBudget({ platform: 'apns' }, store, { windowMs: 100, maxSlice: 10, errorBackoffMs: 500, leaseTimeoutMs: 5_000, now: () => clock.t }, logger, new AbortController().signal);

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

/** How many single tokens can be taken now, without waiting. */
function inHand(budget: SharedBudget): number {
  let n = 0;
  while (budget.tryTake(1)) n++;
  return n;
}

describe('SharedBudget', () => {
  afterEach(() => vi.useRealTimers());

  it("keeps no token of a window whose grant came back late into the next window's grant", async () => {
    // The scripted clock is the budget's; its timers (the lease at the next window's start) stay put.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const clock = { t: 0 };
    // Window 1's grant is sent at 0 and read at 60 (a slow answer, a busy event loop); window 2's
    // is sent and read at 96. Window 2 holds 10 tokens in this process, not 10 plus window 1's rest.
    const store = scriptedStore(clock, [
      { at: 60, grant: { granted: 10, ratePerSec: 100, msLeftInWindow: 90, windowIndex: 1 } },
      { at: 96, grant: { granted: 10, ratePerSec: 100, msLeftInWindow: 95, windowIndex: 2 } },
    ]);
    const budget = budgetOn(store, clock);
    expect(await budget.take(1, 1_000)).toBe(true);
    clock.t = 96;
    expect(budget.tryTake(1)).toBe(true); // window 1's grace; fewer than a slice left, so it leases window 2
    await settle();
    expect(store.leases).toBe(2);
    expect(inHand(budget)).toBe(10);
  });

  it("reckons a grant's window from when the lease was sent, so a slow answer does not stretch it", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const clock = { t: 0 };
    const store = scriptedStore(clock, [{ at: 60, grant: { granted: 10, ratePerSec: 100, msLeftInWindow: 90, windowIndex: 1 } }]);
    const budget = budgetOn(store, clock);
    expect(await budget.take(1, 1_000)).toBe(true);
    // The window ended at 90 by the store's reckoning; its tokens are good for a quarter window more.
    clock.t = 114;
    expect(budget.tryTake(1)).toBe(true);
    clock.t = 116;
    expect(budget.tryTake(1)).toBe(false);
  });

  it('gives up on a lease the store does not answer within leaseTimeoutMs, and serves the waiting push from the next', async () => {
    let calls = 0;
    const store: RateLimitStore = {
      lease: () => {
        calls++;
        // The first lease hangs (a connection a failover left half open); the next is answered.
        if (calls === 1) return new Promise<never>(() => undefined);
        return Promise.resolve({ granted: 10, ratePerSec: 100, msLeftInWindow: 100, windowIndex: calls });
      },
      list: () => Promise.resolve([]),
      pause: () => Promise.resolve(),
      pauses: () => Promise.resolve([]),
    };
    const budget = new SharedBudget({ platform: 'apns' }, store, { windowMs: 100, maxSlice: 10, errorBackoffMs: 50, leaseTimeoutMs: 100, now: Date.now }, logger, new AbortController().signal);
    const started = Date.now();
    expect(await budget.take(1, started + 5_000)).toBe(true);
    expect(calls).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
