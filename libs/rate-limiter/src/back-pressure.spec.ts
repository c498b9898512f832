import { describe, expect, it } from 'vitest';
import { BackPressure } from './back-pressure.ts';

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

describe('BackPressure', () => {
  it('does not slow anything down until a provider pushes back', () => {
    const bp = new BackPressure({}, 0);
    expect(run(bp, 0, 1000)).toBe(10_000);
  });

  it('a throttle halves the rate measured before it, and the rate recovers gradually', () => {
    const bp = new BackPressure({ aimd: { minFactor: 0.05, recoveryPerSec: 0.1, cooldownMs: 1000 } }, 0);
    expect(run(bp, 0, 1000, 1)).toBe(1000); // 1000/s
    expect(bp.throttled(1000)).toBe(true);
    expect(bp.throttled(1500)).toBe(false); // one burst of throttles halves once (cooldown)
    const justAfter = run(bp, 1000, 1000, 1);
    expect(justAfter).toBeGreaterThan(400); // the meter sees the last ~0.9–1 s: about 1000/s
    expect(justAfter).toBeLessThan(600); // 0.5 → 0.6 over the second
    const later = run(bp, 4000, 1000, 1);
    expect(later).toBeGreaterThan(justAfter);
    expect(run(bp, 7000, 1000, 1)).toBe(1000); // factor back to 1: no cap
  });

  it('a quiet sender meeting a wave is halved from what asked to go, not from the little it had sent', () => {
    // Two pushes in the last second, then a wave: 2,000 ask to go and the first answer is a 503.
    const bp = new BackPressure({ aimd: { minFactor: 0.05, recoveryPerSec: 0.1, cooldownMs: 1000 } }, 0);
    bp.sent(1, 100);
    bp.sent(1, 600);
    bp.wanted(2_000, 950);
    expect(bp.throttled(1000)).toBe(true);
    // About 1,000/s (halved from 2,000, recovering) instead of 1/s (halved from 2).
    expect(run(bp, 1000, 1000, 10)).toBeGreaterThan(900);
    // A brownout's next 503, while still slowed, halves from that rate again, not from the meter.
    expect(bp.throttled(2500)).toBe(true);
    expect(run(bp, 2500, 1000, 10)).toBeGreaterThan(300);
  });

  it('never slows below minRatePerSec', () => {
    const bp = new BackPressure({ minRatePerSec: 100, aimd: { minFactor: 0.01, recoveryPerSec: 0, cooldownMs: 0 } }, 0);
    run(bp, 0, 1000, 1);
    for (let t = 1000; t < 1010; t++) bp.throttled(t);
    expect(run(bp, 2000, 1000, 1)).toBeGreaterThanOrEqual(99);
  });
});
