import { describe, expect, it } from 'vitest';
import { TokenBucket } from './token-bucket.ts';

describe('TokenBucket', () => {
  it('starts empty and earns rate tokens per second, up to its capacity', () => {
    const b = new TokenBucket(100, 100, 0);
    expect(b.tryTake(1, 0)).toBe(false);
    expect(b.msUntil(1, 0)).toBe(10);
    expect(b.tryTake(1, 10)).toBe(true);
    // Capacity is 100 ms worth (10 tokens): a long idle time does not allow a burst.
    expect(b.tryTake(10, 10_000)).toBe(true);
    expect(b.tryTake(1, 10_000)).toBe(false);
  });

  it('paces takes to the rate over time', () => {
    const b = new TokenBucket(50, 100, 0);
    let taken = 0;
    for (let t = 0; t <= 2000; t++) if (b.tryTake(1, t)) taken++;
    expect(taken).toBeGreaterThanOrEqual(99);
    expect(taken).toBeLessThanOrEqual(101);
  });

  it('a rate change applies from then on', () => {
    const b = new TokenBucket(10, 1000, 0);
    b.setRate(1000, 0);
    expect(b.msUntil(5, 0)).toBe(5);
  });
});
