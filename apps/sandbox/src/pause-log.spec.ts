import { describe, expect, it } from 'vitest';
import { PauseLog } from './pause-log.ts';

const busyFor = (ms: number): void => {
  const until = Date.now() + ms;
  while (Date.now() < until);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('the sandbox pause log', () => {
  it('records a span in which the event loop was held, where and how long', async () => {
    const log = new PauseLog();
    try {
      await sleep(30);
      const heldFrom = Date.now();
      busyFor(120);
      await sleep(30);
      // (A busy machine may add pauses of its own: look for the one this test made.)
      const stall = log.list().pauses.find((p) => p.kind === 'stall' && p.ms >= 100);
      expect(stall).toBeDefined();
      // It covers the span the loop was held, beginning at most about one tick before it.
      expect(stall?.fromMs).toBeGreaterThanOrEqual(heldFrom - 15);
      expect(stall?.fromMs).toBeLessThanOrEqual(heldFrom);
      expect((stall?.fromMs ?? 0) + (stall?.ms ?? 0)).toBeGreaterThanOrEqual(heldFrom + 120);
    } finally {
      log.close();
    }
  });

  it('keeps only the latest pauses when full', async () => {
    const log = new PauseLog(3);
    try {
      let firstEnded = 0;
      let lastHeldFrom = 0;
      for (let i = 0; i < 4; i++) {
        lastHeldFrom = Date.now();
        busyFor(150);
        if (i === 0) firstEnded = Date.now();
        await sleep(25);
      }
      const { pauses } = log.list();
      expect(pauses).toHaveLength(3);
      const stalls = pauses.filter((p) => p.kind === 'stall');
      expect(stalls.every((p) => p.fromMs >= firstEnded - 15)).toBe(true);
      expect(stalls.some((p) => p.fromMs >= lastHeldFrom - 15 && p.ms >= 130)).toBe(true);
    } finally {
      log.close();
    }
  });
});
