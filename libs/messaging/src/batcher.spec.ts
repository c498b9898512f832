import { describe, expect, it, vi } from 'vitest';
import { Batcher } from './batcher.ts';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * Runs `test` on vitest's fake clock (timers, immediates, performance.now), for a test that checks
 * a batch is still held: on the real one, a loaded machine can sleep past maxWaitMs before the check.
 */
function onFakeClock(test: () => void): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
  try {
    test();
  } finally {
    vi.useRealTimers();
  }
}

/** A Batcher whose batches stay in flight until their `ends` entry is called. */
function heldBatcher(maxSize: number, maxWaitMs: number, maxConcurrent?: number) {
  const batches: number[][] = [];
  const ends: Array<() => void> = [];
  const b = new Batcher<number>(maxSize, maxWaitMs, (items) => {
    batches.push(items);
    return new Promise<void>((r) => ends.push(r));
  }, maxConcurrent);
  return { b, batches, ends };
}

describe('Batcher with maxConcurrent (group commit)', () => {
  it('sends the first item at once, and what arrives while a batch is worked on as the next batch when it ends', async () => {
    const { b, batches, ends } = heldBatcher(3, 0, 1);
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

  it('with none in flight sends at the end of the turn, stream or not; with one in flight, the next batch goes when it ends', async () => {
    const { b, batches, ends } = heldBatcher(10, 1000, 2);
    b.add(1);
    await tick();
    expect(batches).toEqual([[1]]);
    ends[0]?.();
    await tick();
    b.add(2); // just after a flush (a stream), but nothing is being worked on
    b.add(3);
    await tick();
    expect(batches).toEqual([[1], [2, 3]]);
    b.add(4);
    b.add(5);
    await tick();
    expect(batches).toEqual([[1], [2, 3]]); // one in flight: they fill the next batch
    ends[1]?.();
    await tick();
    expect(batches).toEqual([[1], [2, 3], [4, 5]]); // it ended: at once, long before maxWaitMs
  });

  it('keeps maxWaitMs for items arriving while fewer than maxConcurrent batches are in flight', () => {
    onFakeClock(() => {
      const { b, batches } = heldBatcher(10, 20, 2); // none ends
      b.add(1);
      vi.advanceTimersByTime(0);
      expect(batches).toEqual([[1]]); // none in flight: at once
      b.add(2);
      b.add(3);
      vi.advanceTimersByTime(19);
      expect(batches).toEqual([[1]]); // in a stream, one batch of two in flight: it waits to fill
      vi.advanceTimersByTime(1);
      expect(batches).toEqual([[1], [2, 3]]);
      b.add(4);
      vi.advanceTimersByTime(40);
      expect(batches).toEqual([[1], [2, 3]]); // two in flight: it waits for one to end
    });
  });
});

describe('Batcher with maxWaitMs', () => {
  it('sends what comes after a quiet spell at the end of the turn, together, and holds a stream up to maxWaitMs', () => {
    onFakeClock(() => {
      const batches: Array<{ items: number[]; at: number }> = [];
      const b = new Batcher<number>(100, 30, (items) => void batches.push({ items, at: performance.now() }));
      // Quiet so far: a packed message's three parts, added in one turn, go together at the end of it.
      b.add(1);
      b.add(2);
      b.add(3);
      expect(batches).toEqual([]);
      vi.advanceTimersByTime(0);
      expect(batches.map((x) => x.items)).toEqual([[1, 2, 3]]);
      // Within maxWaitMs of that flush: a stream, so the batch fills for maxWaitMs.
      b.add(4);
      vi.advanceTimersByTime(10);
      b.add(5);
      vi.advanceTimersByTime(19);
      expect(batches).toHaveLength(1);
      vi.advanceTimersByTime(1);
      expect(batches.map((x) => x.items)).toEqual([[1, 2, 3], [4, 5]]);
      const [first, second] = batches;
      expect((second?.at ?? 0) - (first?.at ?? 0)).toBe(30);
      // Quiet again (more than maxWaitMs since the last flush): at once.
      vi.advanceTimersByTime(40);
      b.add(6);
      vi.advanceTimersByTime(0);
      expect(batches.map((x) => x.items).at(-1)).toEqual([6]);
    });
  });

  it('without maxConcurrent, sends every batch however many are still in flight', () => {
    const { b, batches } = heldBatcher(1, 20); // none ends
    for (const i of [1, 2, 3]) b.add(i);
    expect(batches).toEqual([[1], [2], [3]]);
  });

  it('drain() cancels the pending flush', async () => {
    const batches: number[][] = [];
    const b = new Batcher<number>(10, 20, (items) => void batches.push(items));
    b.add(1);
    expect(b.drain()).toEqual([1]);
    await new Promise((r) => setTimeout(r, 40));
    expect(batches).toEqual([]);
  });
});
