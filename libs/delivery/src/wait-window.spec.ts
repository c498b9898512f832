import { describe, expect, it } from 'vitest';
import { waitWindow } from './wait-window.ts';

describe('a batch wait window', () => {
  it('aborts at its deadline, or at once when the stop signal aborts; closed, it lets go of the stop signal', async () => {
    const stop = new AbortController();
    const timed = waitWindow(Date.now() + 30, stop.signal);
    await new Promise((r) => setTimeout(r, 60));
    expect(timed.signal.aborted).toBe(true);
    timed.close();
    const stopped = waitWindow(Date.now() + 60_000, stop.signal);
    const closed = waitWindow(Date.now() + 60_000, stop.signal);
    closed.close();
    stop.abort();
    expect(stopped.signal.aborted).toBe(true);
    expect(closed.signal.aborted).toBe(false);
    stopped.close();
    expect(waitWindow(Date.now() + 60_000, stop.signal).signal.aborted).toBe(true);
  });

  it('holds one listener on a process-long stop signal however many batches are in flight, and lets go of each batch as it closes (AbortSignal.any kept about 70 bytes each)', () => {
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
    const [open, ...closed] = inFlight;
    closed.forEach((w) => w.close());
    stop.abort();
    expect(inFlight.map((w) => w.signal.aborted)).toEqual([true, ...closed.map(() => false)]);
    open?.close();
  });
});
