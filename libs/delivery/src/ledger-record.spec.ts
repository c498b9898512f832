import { createLogger } from '@herald/logging';
import { describe, expect, it, vi } from 'vitest';
import { completeDurably, DeliveredRecorder } from './ledger-record.ts';

const logger = createLogger({ service: 'ledger-record-spec', level: 'silent', format: 'json' });
const entries = [{ pushId: 'p1', outcome: 'delivered' }];

describe('completeDurably', () => {
  it('keeps trying while the database is away, and records the pushes once it is back', async () => {
    let calls = 0;
    const recorded: string[] = [];
    const ledger = {
      complete: async (e: typeof entries) => {
        if (++calls < 3) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
        recorded.push(...e.map((x) => x.pushId));
      },
    };
    await completeDurably(ledger, entries, logger);
    expect(calls).toBe(3);
    expect(recorded).toEqual(['p1']);
  });

  it('keeps trying through an outage of minutes (a failover): giving up left the claims to lapse, and the pushes were sent twice', async () => {
    vi.useFakeTimers();
    try {
      const back = Date.now() + 5 * 60_000;
      const ledger = { complete: () => (Date.now() < back ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')) : Promise.resolve()) };
      let recorded = false;
      const recording = completeDurably(ledger, entries, logger).then(() => (recorded = true));
      await vi.advanceTimersByTimeAsync(4 * 60_000);
      expect(recorded).toBe(false);
      await vi.advanceTimersByTimeAsync(61_000);
      await recording;
      expect(recorded).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('counts the pushes it is still trying to record while the database is away (HeraldConsumerStuck holds its fire for them), none once recorded', async () => {
    let waiting = 0;
    const gauge = { inc: (n: number) => void (waiting += n), dec: (n: number) => void (waiting -= n) };
    let calls = 0;
    const seen: number[] = [];
    const ledger = { complete: async () => (seen.push(waiting), ++calls < 3 ? Promise.reject(new Error('connect ECONNREFUSED')) : undefined) };
    await completeDurably(ledger, entries, logger, undefined, gauge);
    expect(seen).toEqual([0, 1, 1]);
    expect(waiting).toBe(0);
    await expect(completeDurably({ complete: () => Promise.reject(new Error('down')) }, entries, logger, AbortSignal.timeout(300), gauge)).rejects.toThrow(/down/);
    expect(waiting).toBe(0);
  });

  it('counts a write the database leaves unanswered (a primary that vanished: the statement hangs) once it has waited 5 s', async () => {
    vi.useFakeTimers();
    try {
      let waiting = 0;
      const gauge = { inc: (n: number) => void (waiting += n), dec: (n: number) => void (waiting -= n) };
      let answer!: () => void;
      const recording = completeDurably({ complete: () => new Promise<void>((r) => (answer = r)) }, entries, logger, undefined, gauge);
      await vi.advanceTimersByTimeAsync(4_000);
      expect(waiting).toBe(0);
      await vi.advanceTimersByTimeAsync(2_000);
      expect(waiting).toBe(1);
      answer();
      await recording;
      expect(waiting).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('gives up with the last error once the pusher stops', async () => {
    const started = Date.now();
    const ledger = { complete: () => Promise.reject(new Error('the database system is shutting down')) };
    await expect(completeDurably(ledger, entries, logger, AbortSignal.timeout(600))).rejects.toThrow(/shutting down/);
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('does nothing for no entries', async () => {
    await completeDurably({ complete: () => Promise.reject(new Error('not called')) }, [], logger);
  });
});

const nextTurn = () => new Promise((r) => setImmediate(r));

describe('DeliveredRecorder', () => {
  it('writes what was added in one turn of the event loop together, then everything added meanwhile in one write', async () => {
    const writes: string[][] = [];
    let release: () => void = () => undefined;
    const ledger = {
      complete: (e: ReadonlyArray<{ pushId: string }>) => {
        writes.push(e.map((x) => x.pushId));
        return writes.length === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve();
      },
    };
    const recorder = new DeliveredRecorder(ledger, logger).batch();
    recorder.add({ pushId: 'a', outcome: 'delivered' });
    recorder.add({ pushId: 'b', outcome: 'delivered' });
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual([['a', 'b']]);
    recorder.add({ pushId: 'c', outcome: 'delivered' });
    recorder.add({ pushId: 'd', outcome: 'delivered' });
    release();
    await recorder.flush();
    expect(writes).toEqual([['a', 'b'], ['c', 'd']]);
  });

  it('shares writes between batches, and a batch waits only for the writes that carry its pushes', async () => {
    const writes: string[][] = [];
    const releases: Array<() => void> = [];
    const ledger = {
      complete: (e: ReadonlyArray<{ pushId: string }>) => {
        writes.push(e.map((x) => x.pushId));
        return new Promise<void>((r) => releases.push(r));
      },
    };
    const recorder = new DeliveredRecorder(ledger, logger);
    const [one, two] = [recorder.batch(), recorder.batch()];
    one.add({ pushId: 'a', outcome: 'delivered' });
    await nextTurn();
    one.add({ pushId: 'b', outcome: 'delivered' });
    two.add({ pushId: 'c', outcome: 'delivered' });
    let oneDone = false;
    const oneFlushed = one.flush().then(() => (oneDone = true));
    releases[0]?.();
    await new Promise((r) => setTimeout(r, 10));
    // 'a' went alone; 'b' (one) and 'c' (two) share the second write, so one is not done yet.
    expect(writes).toEqual([['a'], ['b', 'c']]);
    expect(oneDone).toBe(false);
    two.add({ pushId: 'd', outcome: 'delivered' });
    releases[1]?.();
    await oneFlushed;
    // one is recorded although two's 'd' (a later write) is still being written.
    expect(writes).toEqual([['a'], ['b', 'c'], ['d']]);
    releases[2]?.();
    await two.flush();
  });

  it('counts the pushes queued behind a write that is failing as waiting too, and none once all are recorded', async () => {
    let waiting = 0;
    const seen: number[] = [];
    const gauge = { inc: (n: number) => void (waiting += n), dec: (n: number) => void (waiting -= n) };
    let down = true;
    const ledger = { complete: async () => (seen.push(waiting), down ? Promise.reject(new Error('connect ECONNREFUSED')) : undefined) };
    const recorder = new DeliveredRecorder(ledger, logger, undefined, gauge);
    const [one, two] = [recorder.batch(), recorder.batch()];
    one.add({ pushId: 'a', outcome: 'delivered' });
    await new Promise((r) => setTimeout(r, 50)); // a's write has failed once: it waits
    expect(waiting).toBe(1);
    two.add({ pushId: 'b', outcome: 'delivered' });
    two.add({ pushId: 'c', outcome: 'delivered' });
    expect(waiting).toBe(3);
    down = false;
    await Promise.all([one.flush(), two.flush()]);
    expect(waiting).toBe(0);
    // b and c's own write, after a's, found the database back at once: counted only while behind a's.
    expect(seen.at(-1)).toBe(0);
  });

  it('flush rejects when the pusher stops before the ledger is back', async () => {
    const recorder = new DeliveredRecorder({ complete: () => Promise.reject(new Error('down')) }, logger, AbortSignal.timeout(600)).batch();
    recorder.add({ pushId: 'a', outcome: 'delivered' });
    await expect(recorder.flush()).rejects.toThrow(/down/);
  });
});
