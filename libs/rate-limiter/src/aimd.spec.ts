import { describe, expect, it } from 'vitest';
import { Aimd } from './aimd.ts';

describe('Aimd', () => {
  const options = { minFactor: 0.1, recoveryPerSec: 0.1, cooldownMs: 1000 };

  it('starts at 1, halves on a throttle and recovers linearly back to 1', () => {
    const aimd = new Aimd(options);
    expect(aimd.factor(0)).toBe(1);
    expect(aimd.decrease(10_000)).toBe(true);
    expect(aimd.factor(10_000)).toBe(0.5);
    expect(aimd.factor(12_000)).toBeCloseTo(0.7);
    expect(aimd.factor(15_000)).toBe(1);
    expect(aimd.factor(60_000)).toBe(1);
  });

  it('a burst of throttles inside the cooldown halves once; later ones halve again', () => {
    const aimd = new Aimd(options);
    aimd.decrease(0);
    expect(aimd.decrease(500)).toBe(false);
    expect(aimd.factor(500)).toBeCloseTo(0.55);
    expect(aimd.decrease(1000)).toBe(true);
    expect(aimd.factor(1000)).toBeCloseTo(0.3);
  });

  it('never drops below the minimum factor', () => {
    const aimd = new Aimd({ ...options, minFactor: 0.3, recoveryPerSec: 0 });
    aimd.decrease(0);
    expect(aimd.factor(0)).toBe(0.5);
    aimd.decrease(1000);
    expect(aimd.factor(1000)).toBe(0.3);
    aimd.decrease(2000);
    expect(aimd.factor(2000)).toBe(0.3);
  });
});
