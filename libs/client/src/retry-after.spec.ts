import { describe, expect, it } from 'vitest';
import { DEFAULT_OVERLOAD_WAIT_MS, overloadWaitMs, retryAfterMs } from './retry-after.ts';

const now = Date.parse('2026-12-07T12:00:00Z');

describe('Retry-After', () => {
  it('reads delay-seconds', () => {
    expect(retryAfterMs('1', now)).toBe(1_000);
    expect(retryAfterMs(' 120 ', now)).toBe(120_000);
    expect(retryAfterMs('0', now)).toBe(0);
  });

  it('reads an HTTP-date in each of its three forms as the time until it, a date passed as 0', () => {
    expect(retryAfterMs('Mon, 07 Dec 2026 12:00:05 GMT', now)).toBe(5_000);
    expect(retryAfterMs('Monday, 07-Dec-26 12:00:05 GMT', now)).toBe(5_000);
    expect(retryAfterMs('Mon Dec  7 12:00:05 2026', now)).toBe(5_000);
    expect(retryAfterMs('Mon, 07 Dec 2026 11:59:00 GMT', now)).toBe(0);
  });

  it('reads nothing from a missing or unreadable header, rather than guessing', () => {
    for (const header of [null, undefined, '', 'soon', '1.5', '-1', 'Dec 2026', '1s', 'Mon, 07 Dec 2026 12:00:05 CET'])
      expect(retryAfterMs(header, now), String(header)).toBeUndefined();
  });

  it('waits at least what the header asks, the default when it is unreadable, with up to a fifth (at least 100 ms) of jitter', () => {
    expect(overloadWaitMs(retryAfterMs('1', now), () => 0)).toBe(1_000);
    expect(overloadWaitMs(retryAfterMs('1', now), () => 1)).toBe(1_200);
    expect(overloadWaitMs(retryAfterMs('0', now), () => 1)).toBe(100);
    expect(overloadWaitMs(retryAfterMs('Mon, 07 Dec 2026 12:00:10 GMT', now), () => 0.5)).toBe(11_000);
    expect(overloadWaitMs(retryAfterMs('garbage', now), () => 0)).toBe(DEFAULT_OVERLOAD_WAIT_MS);
    expect(overloadWaitMs(retryAfterMs(null, now), () => 0)).toBe(DEFAULT_OVERLOAD_WAIT_MS);
  });
});
