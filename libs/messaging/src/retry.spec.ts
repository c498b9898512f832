import { describe, expect, it } from 'vitest';
import { LONGEST_DELAY_MS, delayQueuesOf, distinctDelays, handlerBackoffMs, planDefer, planRetry } from './retry.ts';

const delays = [1000, 5000, 30_000];

describe('planRetry', () => {
  it('uses the delay for the attempt, jittered down by at most 20% so it fits its queue TTL', () => {
    expect(planRetry(1, delays, undefined, () => 0)).toEqual({ kind: 'delay', queueDelayMs: 1000, expirationMs: 1000 });
    expect(planRetry(2, delays, undefined, () => 1)).toEqual({ kind: 'delay', queueDelayMs: 5000, expirationMs: 4000 });
    expect(planRetry(3, delays, undefined, () => 0.5)).toEqual({ kind: 'delay', queueDelayMs: 30_000, expirationMs: 27_000 });
  });

  it('spreads jitter across the whole 80–100% band', () => {
    const seen = Array.from({ length: 500 }, () => planRetry(1, delays, undefined)).map((p) => (p.kind === 'delay' ? p.expirationMs : -1));
    expect(Math.min(...seen)).toBeGreaterThanOrEqual(800);
    expect(Math.max(...seen)).toBeLessThanOrEqual(1000);
    expect(Math.max(...seen) - Math.min(...seen)).toBeGreaterThan(100);
  });

  it('is exhausted once the attempt is past the schedule', () => {
    expect(planRetry(4, delays, undefined)).toEqual({ kind: 'exhausted' });
    expect(planRetry(1, [], 500)).toEqual({ kind: 'exhausted' });
  });

  it('puts an explicit delay longer than the schedule\'s into the smallest delay queue that can hold it, due up to 20% after it', () => {
    expect(planRetry(1, delays, 3000, () => 0)).toEqual({ kind: 'delay', queueDelayMs: 5000, expirationMs: 3000 });
    expect(planRetry(1, delays, 3000, () => 1)).toEqual({ kind: 'delay', queueDelayMs: 5000, expirationMs: 3600 });
    expect(planRetry(1, delays, 1000, () => 1)).toEqual({ kind: 'delay', queueDelayMs: 5000, expirationMs: 1200 });
    // Google's minute for QUOTA_EXCEEDED on the first attempt; on the fourth the schedule's two minutes are longer.
    expect(planRetry(1, [1000, 5000, 30_000, 120_000, 600_000], 60_000, () => 0.5)).toEqual({ kind: 'delay', queueDelayMs: 120_000, expirationMs: 66_000 });
    expect(planRetry(4, [1000, 5000, 30_000, 120_000, 600_000], 60_000, () => 0)).toEqual({ kind: 'delay', queueDelayMs: 120_000, expirationMs: 120_000 });
  });

  it('an explicit delay shorter than the schedule\'s is a floor: the retry waits the schedule, so back-off still grows', () => {
    expect(planRetry(2, delays, 10, () => 0)).toEqual({ kind: 'delay', queueDelayMs: 5000, expirationMs: 5000 });
    // Within the jitter band, the request wins over a shorter jittered delay, and is spread above.
    expect(planRetry(2, delays, 4900, () => 1)).toEqual({ kind: 'delay', queueDelayMs: 30_000, expirationMs: 5880 });
  });

  it("an explicit delay beyond the schedule's largest queue waits in the queue of the longest waits, for the delay asked, up to LONGEST_DELAY_MS spread over the fifth above", () => {
    // APNs' 15 minutes after a 5xx, with a schedule whose largest queue is 30 s: due at 15 minutes,
    // in a queue of its own (not the 30 s queue, whose relays it would have held ten minutes at a time).
    expect(LONGEST_DELAY_MS).toBe(1_200_000);
    expect(planRetry(1, delays, 900_000, () => 0)).toEqual({ kind: 'delay', queueDelayMs: 1_200_000, expirationMs: 900_000 });
    expect(planRetry(1, delays, 900_000, () => 1)).toEqual({ kind: 'delay', queueDelayMs: 1_200_000, expirationMs: 1_080_000 });
    // An hour asked: capped at LONGEST_DELAY_MS, spread above it.
    expect(planRetry(1, delays, 3_600_000, () => 0)).toEqual({ kind: 'delay', queueDelayMs: 1_200_000, expirationMs: 1_200_000 });
    expect(planRetry(1, delays, 3_600_000, () => 1)).toEqual({ kind: 'delay', queueDelayMs: 1_200_000, expirationMs: 1_440_000 });
    // A schedule whose largest queue is longer: up to its delay.
    expect(planRetry(1, [3_000_000], 9_000_000, () => 0)).toEqual({ kind: 'delay', queueDelayMs: 3_000_000, expirationMs: 3_000_000 });
    // The schedule's own queues hold only what is due within their delay.
    for (const floor of [31_000, 600_000, 900_000, 1_000_000]) {
      const plan = planRetry(1, delays, floor);
      expect(plan.kind === 'delay' && plan.expirationMs <= plan.queueDelayMs && plan.expirationMs >= floor).toBe(true);
    }
  });

  it('retries given one Retry-After come back spread over the fifth above it, never before it, each in a queue that holds it', () => {
    // Before, every push that got "Retry-After: 7" was due at exactly 7,000 ms (found by a review of the back-off).
    const plans = Array.from({ length: 1000 }, () => planRetry(1, delays, 7000));
    const due = plans.map((p) => (p.kind === 'delay' ? p.expirationMs : -1));
    expect(Math.min(...due)).toBeGreaterThanOrEqual(7000);
    expect(Math.max(...due)).toBeLessThanOrEqual(8400);
    expect(Math.max(...due) - Math.min(...due)).toBeGreaterThan(1000);
    plans.forEach((p) => expect(p.kind === 'delay' && p.expirationMs <= p.queueDelayMs).toBe(true));
  });
});

describe('planDefer', () => {
  const production = [1000, 5000, 30_000, 120_000, 600_000];

  it("pushes deferred to one pause's end come back spread over the fifth after it, never before it, each in a queue that holds it", () => {
    // Before, 30,000 pushes deferred for a 30 s pause were all due at 30,000 ms, in every pusher at once.
    const plans = Array.from({ length: 1000 }, () => planDefer(production, 30_000, true));
    const due = plans.map((p) => (p.kind === 'delay' ? p.expirationMs : -1));
    expect(Math.min(...due)).toBeGreaterThanOrEqual(30_000);
    expect(Math.max(...due)).toBeLessThanOrEqual(36_000);
    expect(Math.max(...due) - Math.min(...due)).toBeGreaterThan(5000);
    // Each in the smallest queue that holds it: 120 s, or 30 s for one drawn exactly at the floor.
    plans.forEach((p) => expect(p).toEqual({ kind: 'delay', expirationMs: expect.any(Number), queueDelayMs: p.kind === 'delay' && p.expirationMs <= 30_000 ? 30_000 : 120_000 }));
    // A floor just under a queue's delay spills into the next queue rather than past its own.
    expect(planDefer(production, 4900, true, () => 1)).toEqual({ kind: 'delay', queueDelayMs: 30_000, expirationMs: 5880 });
    expect(planDefer(production, 4900, true, () => 0)).toEqual({ kind: 'delay', queueDelayMs: 5000, expirationMs: 4900 });
  });

  it("pushes deferred to a pause as long as the largest delay queue (the pause's cap) are spread too, in that queue", () => {
    // Before, every draw above 600 s was clamped to 600 s: the whole herd back at one instant (found by a review).
    for (const floor of [600_000, 550_000, 3_600_000]) {
      const plans = Array.from({ length: 1000 }, () => planDefer(production, floor, true));
      const due = plans.map((p) => (p.kind === 'delay' ? p.expirationMs : -1));
      expect(Math.min(...due)).toBeGreaterThanOrEqual(Math.min(floor, LONGEST_DELAY_MS));
      expect(Math.max(...due)).toBeLessThanOrEqual(Math.min(floor, LONGEST_DELAY_MS) * 1.2);
      expect(new Set(due).size).toBeGreaterThan(900);
      // In the 600 s queue while due within it, else in the queue of the longest waits (past it, spread above its delay).
      plans.forEach((p) => expect(p.kind === 'delay' && (p.queueDelayMs === 600_000 ? p.expirationMs <= 600_000 : p.queueDelayMs === LONGEST_DELAY_MS)).toBe(true));
    }
  });

  it('a turn booked for one push is kept exactly', () => {
    expect(planDefer(production, 1234)).toEqual({ kind: 'delay', queueDelayMs: 5000, expirationMs: 1234 });
    expect(planDefer(production, 3_600_000)).toEqual({ kind: 'delay', queueDelayMs: LONGEST_DELAY_MS, expirationMs: LONGEST_DELAY_MS });
  });
});

describe('delayQueuesOf', () => {
  it("is the schedule's distinct delays and the queue of the longest waits; none without a schedule", () => {
    expect(delayQueuesOf([1000, 5000, 30_000, 120_000, 600_000])).toEqual([1000, 5000, 30_000, 120_000, 600_000, LONGEST_DELAY_MS]);
    expect(delayQueuesOf([3_000_000, 1000])).toEqual([1000, LONGEST_DELAY_MS, 3_000_000]);
    expect(delayQueuesOf([LONGEST_DELAY_MS])).toEqual([LONGEST_DELAY_MS]);
    expect(delayQueuesOf([])).toEqual([]);
  });
});

describe('distinctDelays', () => {
  it('dedupes, rounds, drops non-positive and sorts', () => {
    expect(distinctDelays([5000, 1000, 1000, 0, 200.4])).toEqual([200, 1000, 5000]);
  });
});

describe('handlerBackoffMs', () => {
  it('doubles from 0.5 s and caps at 30 s', () => {
    expect([0, 1, 2, 3, 7, 8, 20].map(handlerBackoffMs)).toEqual([0, 500, 1000, 2000, 30_000, 30_000, 30_000]);
  });
});
