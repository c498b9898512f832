import { describe, expect, it } from 'vitest';
import { retryAfterMs, retryAfterSecondsOf } from './retry-after.ts';

describe('retryAfterSecondsOf (RFC 9110 Retry-After: delay-seconds or HTTP-date)', () => {
  const now = Date.UTC(2025, 5, 1, 12, 0, 0);

  it('reads delay-seconds, as a header string or a number', () => {
    expect(retryAfterSecondsOf('7', now)).toBe(7);
    expect(retryAfterSecondsOf(' 120 ', now)).toBe(120);
    expect(retryAfterSecondsOf('0', now)).toBe(0);
    expect(retryAfterSecondsOf(30, now)).toBe(30);
  });

  it('reads an HTTP-date (all three RFC forms) as the seconds until then, rounded up; a past date is 0', () => {
    expect(retryAfterSecondsOf('Sun, 01 Jun 2025 12:00:07 GMT', now)).toBe(7);
    expect(retryAfterSecondsOf('Sunday, 01-Jun-25 12:00:10 GMT', now)).toBe(10);
    // asctime carries no zone: V8 reads it as local time.
    expect(retryAfterSecondsOf('Sun Jun  1 12:01:00 2025', now + new Date(now).getTimezoneOffset() * 60_000)).toBe(60);
    expect(retryAfterSecondsOf('Sun, 01 Jun 2025 12:00:07 GMT', now + 6_500)).toBe(1);
    expect(retryAfterSecondsOf('Sun, 01 Jun 2025 11:00:00 GMT', now)).toBe(0);
  });

  it('is undefined when absent or unreadable', () => {
    expect(retryAfterSecondsOf(undefined, now)).toBeUndefined();
    expect(retryAfterSecondsOf(null, now)).toBeUndefined();
    expect(retryAfterSecondsOf('', now)).toBeUndefined();
    expect(retryAfterSecondsOf('soon', now)).toBeUndefined();
    expect(retryAfterSecondsOf('1.5', now)).toBeUndefined();
    expect(retryAfterSecondsOf('-3', now)).toBeUndefined();
  });

  it('gives milliseconds for the pushers and the limiter', () => {
    expect(retryAfterMs('7', now)).toBe(7000);
    expect(retryAfterMs('Sun, 01 Jun 2025 12:00:07 GMT', now + 6_500)).toBe(1000);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });
});
