import { describe, expect, it } from 'vitest';
import { samplingGaps } from './profile-gaps.ts';

describe('gaps in a CPU profile', () => {
  it('finds none in a profile sampled every millisecond with some jitter', () => {
    const deltas = Array.from({ length: 1_000 }, (_, i) => 1_000 + (i % 7) * 100);
    expect(samplingGaps(deltas)).toEqual({ share: 0, longestUs: 1_600 });
  });

  it('measures the time lost between samples, as the API profile of 2026-11-28 19:13 had it (16 s unsampled)', () => {
    const deltas = [...Array.from({ length: 4_000 }, () => 1_000), 16_000_000, 20_000];
    const gaps = samplingGaps(deltas);
    expect(gaps.share).toBeCloseTo(16_020_000 / 20_020_000, 6);
    expect(gaps.longestUs).toBe(16_000_000);
  });

  it('counts only the gaps longer than the threshold', () => {
    expect(samplingGaps([5_000, 5_000, 30_000], 10_000).share).toBeCloseTo(0.75, 6);
    expect(samplingGaps([5_000, 5_000, 30_000], 50_000).share).toBe(0);
  });

  it('says nothing for an empty profile rather than NaN', () => {
    expect(samplingGaps([])).toEqual({ share: 0, longestUs: 0 });
  });
});
