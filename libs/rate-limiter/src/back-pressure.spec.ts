import { describe, expect, it } from 'vitest';
import { BackPressure, isThrottle } from './back-pressure.ts';

/** Simulate sending as fast as allowed for `ms` milliseconds from `from`; returns how many went. */
function run(bp: BackPressure, from: number, ms: number, perMs = 10): number {
  let sent = 0;
  for (let t = from; t < from + ms; t++) {
    for (let k = 0; k < perMs; k++) {
      if (bp.delayFor(1, t) > 0) break;
      bp.sent(1, t);
      sent++;
    }
  }
  return sent;
}

describe('isThrottle', () => {
  it('recognises APNs 429 / 503 and FCM quota errors, not other transient failures', () => {
    expect(isThrottle({ kind: 'transient', reason: 'TooManyRequests', retryAfterMs: 1000 })).toBe(true);
    expect(isThrottle({ kind: 'transient', reason: 'QUOTA_EXCEEDED: Quota exceeded' })).toBe(true);
    expect(isThrottle({ kind: 'transient', reason: 'message-rate-exceeded: slow down' })).toBe(true);
    expect(isThrottle({ kind: 'transient', reason: 'ServiceUnavailable' })).toBe(true);
    expect(isThrottle({ kind: 'transient', reason: 'transport: ECONNRESET' })).toBe(false);
    expect(isThrottle({ kind: 'transient', reason: 'InternalServerError' })).toBe(false);
    expect(isThrottle({ kind: 'permanent', reason: 'TooManyRequests' })).toBe(false);
  });
});

describe('BackPressure', () => {
  it('does not slow anything down until a provider pushes back', () => {
    const bp = new BackPressure({}, 0);
    expect(run(bp, 0, 1000)).toBe(10_000);
  });

  it('a throttle halves the rate measured before it, and the rate recovers gradually', () => {
    const bp = new BackPressure({ aimd: { minFactor: 0.05, recoveryPerSec: 0.1, cooldownMs: 1000 } }, 0);
    expect(run(bp, 0, 1000, 1)).toBe(1000); // 1000/s
    expect(bp.observe({ kind: 'transient', reason: 'TooManyRequests' }, 1000)).toBe(true);
    const justAfter = run(bp, 1000, 1000, 1);
    expect(justAfter).toBeGreaterThan(400); // the meter sees the last ~0.9–1 s: about 1000/s
    expect(justAfter).toBeLessThan(600); // 0.5 → 0.6 over the second
    const later = run(bp, 4000, 1000, 1);
    expect(later).toBeGreaterThan(justAfter);
    expect(run(bp, 7000, 1000, 1)).toBe(1000); // factor back to 1: no cap
  });

  it('honours retry-after by pausing, capped by maxPauseMs', () => {
    const bp = new BackPressure({ maxPauseMs: 5000 }, 0);
    bp.observe({ kind: 'transient', reason: 'InternalServerError', retryAfterMs: 2000 }, 100);
    expect(bp.delayFor(1, 100)).toBe(2000);
    expect(bp.delayFor(1, 2100)).toBe(0);
    bp.observe({ kind: 'transient', reason: 'ServiceUnavailable', retryAfterMs: 3_600_000 }, 3000);
    expect(bp.delayFor(1, 3000)).toBe(5000);
  });

  it('ignores delivered pushes and non-throttle failures', () => {
    const bp = new BackPressure({}, 0);
    expect(bp.observe({ kind: 'delivered' }, 0)).toBe(false);
    expect(bp.observe({ kind: 'transient', reason: 'transport: timeout' }, 0)).toBe(false);
    expect(bp.factor(0)).toBe(1);
  });
});
