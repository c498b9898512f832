import { describe, expect, it } from 'vitest';
import { waitWindow } from './wait-window.ts';

describe('a batch wait window', () => {
  it('aborts at its deadline, or at once when the stop signal aborts, or when its batch closes it (a send still waiting when its batch failed)', async () => {
    const stop = new AbortController();
    const timed = waitWindow(Date.now() + 30, stop.signal);
    await new Promise((r) => setTimeout(r, 60));
    expect(timed.signal.aborted).toBe(true);
    timed.close();
    const stopped = waitWindow(Date.now() + 60_000, stop.signal);
    stop.abort();
    expect(stopped.signal.aborted).toBe(true);
    stopped.close();
    expect(waitWindow(Date.now() + 60_000, stop.signal).signal.aborted).toBe(true);
    const left = waitWindow(Date.now() + 60_000);
    left.close();
    expect(left.signal.aborted).toBe(true);
  });

  it('holds one listener on a process-long stop signal however many batches are in flight (AbortSignal.any kept about 70 bytes each for good)', () => {
    const stop = new AbortController();
    let listeners = 0;
    const add = stop.signal.addEventListener.bind(stop.signal);
    const remove = stop.signal.removeEventListener.bind(stop.signal);
    stop.signal.addEventListener = ((...args: Parameters<typeof add>) => (listeners++, add(...args))) as typeof add;
    stop.signal.removeEventListener = ((...args: Parameters<typeof remove>) => (listeners--, remove(...args))) as typeof remove;
    const inFlight = Array.from({ length: 50 }, () => waitWindow(Date.now() + 60_000, stop.signal));
    expect(listeners).toBeLessThanOrEqual(1);
    for (let i = 0; i < 10_000; i++) waitWindow(Date.now() + 60_000, stop.signal).close();
    expect(listeners).toBeLessThanOrEqual(1);
    inFlight.forEach((w) => w.close());
    expect(listeners).toBeLessThanOrEqual(1);
  });
});
