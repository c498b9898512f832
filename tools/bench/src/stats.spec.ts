import { describe, expect, it } from 'vitest';
import { alternating, median, percentile, wholeMedian } from './stats.ts';

describe('bench statistics', () => {
  it('takes the middle run of an odd count, whatever the order the runs came in', () => {
    expect(median([5_819, 5_709, 5_863])).toBe(5_819);
  });

  it('averages the two middle runs of an even count, rather than picking one of them', () => {
    expect(median([0.97, 1.01, 0.91, 1.1])).toBeCloseTo(0.99, 10);
  });

  it('rounds a median to whole units, so an even count of runs does not print 4570.5 pushes/s', () => {
    expect(wholeMedian([4_570, 4_571])).toBe(4_571);
    expect(wholeMedian([56, 52, 60])).toBe(56);
  });

  it('says NaN for no runs, so an empty report cannot pass for a figure', () => {
    expect(median([])).toBeNaN();
    expect(percentile([], 99)).toBeNaN();
  });

  it('leaves the caller\'s array in its order', () => {
    const runs = [3, 1, 2];
    median(runs);
    expect(runs).toEqual([3, 1, 2]);
  });

  it('reads a percentile by nearest rank from sorted latencies, p99 of 100 being the 100th', () => {
    const latencies = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(latencies, 50)).toBe(51);
    expect(percentile(latencies, 99)).toBe(100);
    expect(percentile(latencies, 100)).toBe(100);
  });

  it('puts each of the things compared first in every other round, without reordering the caller\'s list', () => {
    const kinds = ['a', 'b', 'c'];
    expect([0, 1, 2, 3].map((i) => alternating(kinds, i).join(''))).toEqual(['abc', 'cba', 'abc', 'cba']);
    expect(kinds).toEqual(['a', 'b', 'c']);
  });
});
