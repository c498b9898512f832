import { describe, expect, it } from 'vitest';
import { backgroundBatcher, coalesce, coalesceMany } from './coalescer.ts';

describe('coalesce', () => {
  it('turns calls made in one turn into one batch, each caller getting its own answer', async () => {
    const batches: number[][] = [];
    const double = coalesce(async (xs: number[]) => (batches.push(xs), xs.map((x) => x * 2)));
    expect(await Promise.all([double(1), double(2), double(3)])).toEqual([2, 4, 6]);
    expect(await double(4)).toBe(8);
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });

  it("splits at maxBatch between callers, never within one caller's items, and rejects every caller of a failed batch", async () => {
    const batches: string[][] = [];
    const echo = coalesceMany(async (xs: string[]) => (batches.push(xs), xs), 2);
    // A request's job ids go in one statement (all recorded or none), however many.
    expect(await echo(['a', 'b', 'c'])).toEqual(['a', 'b', 'c']);
    expect(batches).toEqual([['a', 'b', 'c']]);
    batches.length = 0;
    expect(await Promise.all([echo(['d']), echo(['e']), echo(['f', 'g']), echo([]), echo(['h'])])).toEqual([['d'], ['e'], ['f', 'g'], [], ['h']]);
    expect(batches).toEqual([['d', 'e'], ['f', 'g'], ['h']]);
    const failing = coalesce(async (): Promise<number[]> => {
      throw new Error('db down');
    });
    await expect(Promise.all([failing(1), failing(2)])).rejects.toThrow('db down');
  });
});

describe('backgroundBatcher', () => {
  it('returns at once, runs what waited delayMs as one batch, and reports a failed batch', async () => {
    const batches: number[][] = [];
    const failures: Array<{ err: string; items: readonly number[] }> = [];
    let fail = false;
    const b = backgroundBatcher(
      async (xs: number[]) => {
        if (fail) throw new Error('db down');
        batches.push(xs);
      },
      { delayMs: 20, maxBatch: 3, onError: (err, items) => failures.push({ err: (err as Error).message, items }) },
    );
    b.add([1]);
    b.add([2]);
    expect(batches).toEqual([]);
    await new Promise((r) => setTimeout(r, 40));
    expect(batches).toEqual([[1, 2]]);
    b.add([3, 4, 5, 6]);
    await b.flush();
    expect(batches).toEqual([[1, 2], [3, 4, 5], [6]]);
    fail = true;
    b.add([7]);
    await b.flush();
    expect(failures).toEqual([{ err: 'db down', items: [7] }]);
  });
});
