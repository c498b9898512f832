import { describe, expect, it } from 'vitest';
import { durationSeconds, isDuration } from './duration.ts';

describe('Duration', () => {
  it('reads seconds with up to nine decimals', () => {
    expect(durationSeconds('3600s')).toBe(3600);
    expect(durationSeconds('0s')).toBe(0);
    expect(durationSeconds('1.000000001s')).toBeCloseTo(1.000000001);
    expect(isDuration('1.5s')).toBe(true);
  });

  it.each([3600, '3600', '-1s', '1.0000000001s', '1m', 's'])('refuses %j', (v) => {
    expect(durationSeconds(v)).toBeUndefined();
  });
});
