import { describe, expect, it } from 'vitest';
import { windowShare } from './window-share.ts';

describe('windowShare', () => {
  it('splits a rate evenly over 100 ms windows', () => {
    expect(windowShare(500, 17_000_000_000, 100)).toBe(50);
    expect(windowShare(2000, 3, 100)).toBe(200);
  });

  it('the windows of every second add up to the rate exactly, even when the rate does not divide', () => {
    for (const rate of [1, 7, 33, 499, 1001]) {
      for (const second of [0, 1, 123_456_789]) {
        const first = second * 10;
        const total = Array.from({ length: 10 }, (_, k) => windowShare(rate, first + k, 100)).reduce((a, b) => a + b, 0);
        expect(total, `rate ${rate}`).toBe(rate);
      }
    }
  });

  it('a slow rate gives most windows nothing and never more than one token', () => {
    const shares = Array.from({ length: 20 }, (_, k) => windowShare(3, k, 100));
    expect(Math.max(...shares)).toBe(1);
    expect(shares.reduce((a, b) => a + b, 0)).toBe(6);
  });
});
