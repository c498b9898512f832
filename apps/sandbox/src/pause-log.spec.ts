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
      // The log's tick runs in the same timers phase as the sleep's end when both are due (a late
      // wake on a loaded machine): let that phase finish, so the hold starts after the last tick.
      await new Promise((r) => setImmediate(r));
      // How long before the hold that tick ran depends on the machine's load (a suite on two busy
      // cores saw 16 ms): the stall is dated from that tick, whenever it was.
      const lastTick = log.lastTickMs;
      const heldFrom = Date.now();
      busyFor(120);
      await sleep(30);
      // (A busy machine may add pauses of its own: look for the one this test made.)
      const stall = log.list().pauses.find((p) => p.kind === 'stall' && p.fromMs === lastTick);
      expect(stall).toBeDefined();
      // It covers the span the loop was held: from the last tick that ran before it to past its end.
      expect(stall?.fromMs).toBeLessThanOrEqual(heldFrom);
      expect((stall?.fromMs ?? 0) + (stall?.ms ?? 0)).toBeGreaterThanOrEqual(heldFrom + 120);
    } finally {
      log.close();
    }
  });

  it('keeps only the latest pauses when full', async () => {
    const log = new PauseLog(3);
    try {
      // Four holds: each leaves a stall that covers it, from the last tick before it to the late
      // one after. How far before the hold that tick ran depends on the machine's load (the first
      // test holds the dating to a tick); here a hold's stall is the one whose span covers it.
      const holds: Array<{ from: number; to: number }> = [];
      for (let i = 0; i < 4; i++) {
        const from = Date.now();
        busyFor(150);
        holds.push({ from, to: Date.now() });
        await sleep(25);
      }
      const { pauses } = log.list();
      expect(pauses).toHaveLength(3);
      const covered = holds.map(({ from, to }) => pauses.some((p) => p.kind === 'stall' && p.fromMs <= from && p.fromMs + p.ms >= to));
      // The oldest hold's stall was dropped for the newer ones; the latest hold's is kept.
      expect(covered[0]).toBe(false);
      expect(covered[3]).toBe(true);
    } finally {
      log.close();
    }
  });
});
