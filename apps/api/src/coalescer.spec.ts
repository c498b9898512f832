import { describe, expect, it } from 'vitest';
import { coalesce, coalesceMany } from './coalescer.ts';

describe('coalesce', () => {
  it('turns calls made in one turn into one batch, each caller getting its own answer', async () => {
    const batches: number[][] = [];
    const double = coalesce(async (xs: number[]) => (batches.push(xs), xs.map((x) => x * 2)));
    expect(await Promise.all([double(1), double(2), double(3)])).toEqual([2, 4, 6]);
    expect(await double(4)).toBe(8);
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });

  it('splits at maxBatch and rejects every caller of a failed batch', async () => {
    const batches: string[][] = [];
    const echo = coalesceMany(async (xs: string[]) => (batches.push(xs), xs), 2);
    expect(await echo(['a', 'b', 'c'])).toEqual(['a', 'b', 'c']);
    expect(batches).toEqual([['a', 'b'], ['c']]);
    const failing = coalesce(async (): Promise<number[]> => {
      throw new Error('db down');
    });
    await expect(Promise.all([failing(1), failing(2)])).rejects.toThrow('db down');
  });
});
