import { describe, expect, it } from 'vitest';
import { Batcher } from './batcher.ts';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('Batcher with maxConcurrent (group commit)', () => {
  it('sends the first item at once, and what arrives while a batch is worked on as the next batch when it ends', async () => {
    const batches: number[][] = [];
    const ends: Array<() => void> = [];
    const b = new Batcher<number>(3, 0, (items) => {
      batches.push(items);
      return new Promise<void>((r) => ends.push(r));
    }, 1);
    b.add(1);
    expect(batches).toEqual([[1]]);
    for (const i of [2, 3, 4, 5]) b.add(i);
    expect(batches).toEqual([[1]]); // waiting for the first batch, however long
    ends[0]?.();
    await tick();
    expect(batches).toEqual([[1], [2, 3, 4]]); // up to maxSize
    ends[1]?.();
    await tick();
    expect(batches).toEqual([[1], [2, 3, 4], [5]]);
    ends[2]?.();
    await tick();
    b.add(6);
    expect(batches.at(-1)).toEqual([6]); // idle again: at once
  });

  it('keeps maxWaitMs for items arriving while fewer batches are in flight, and no bound without maxConcurrent', async () => {
    const batches: number[][] = [];
    const b = new Batcher<number>(10, 20, (items) => void batches.push(items));
    b.add(1);
    b.add(2);
    expect(batches).toEqual([]);
    await new Promise((r) => setTimeout(r, 40));
    expect(batches).toEqual([[1, 2]]);
  });
});
