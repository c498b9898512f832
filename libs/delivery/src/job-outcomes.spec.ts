import { derivePushId, type DevicePush } from '@herald/contracts';
import type { PushOutcomeEntry } from '@herald/db';
import { createLogger } from '@herald/logging';
import { describe, expect, it } from 'vitest';
import { createJobOutcomeRecorder } from './job-outcomes.ts';

const logger = createLogger({ service: 'spec', level: 'silent' });
const push = (n: number) => ({ pushId: derivePushId('j', String(n)), jobId: 'j', platform: 'apns', deviceId: String(n) }) as DevicePush;

/** A store that refuses its first `failures` writes (a failover), then records. */
function flakyStore(failures: number) {
  const stored: PushOutcomeEntry[] = [];
  let left = failures;
  return {
    stored,
    recordOutcomes(entries: readonly PushOutcomeEntry[]) {
      if (left-- > 0) return Promise.reject(new Error('ECONNREFUSED'));
      stored.push(...entries);
      return Promise.resolve();
    },
  };
}

describe('job outcomes while PostgreSQL refuses them', () => {
  // Dropped after one failed write, their pushes showed in flight for good and the job's status never added up.
  it('keeps a refused batch for the next flush, ahead of what was noted since', async () => {
    const store = flakyStore(1);
    const recorder = createJobOutcomeRecorder(store, logger);
    recorder.note(push(1), 'delivered');
    await recorder.flush();
    expect(store.stored).toEqual([]);
    recorder.note(push(2), 'invalid');
    await recorder.flush();
    expect(store.stored.map((e) => [e.deviceId, e.outcome])).toEqual([['1', 'delivered'], ['2', 'invalid']]);
  });

  it('writes one flush at a time, so a refused older outcome of a push never lands after its newer one', async () => {
    // The first write is slow and refused (a failover): a second flush meanwhile waits for it, then
    // writes the kept older outcome and the newer one together, the newer last.
    const stored: PushOutcomeEntry[] = [];
    let calls = 0;
    const recorder = createJobOutcomeRecorder(
      {
        recordOutcomes: async (entries) => {
          if (calls++ === 0) {
            await new Promise((r) => setTimeout(r, 50));
            throw new Error('ECONNRESET');
          }
          stored.push(...entries);
        },
      },
      logger,
    );
    recorder.noteEntry({ ...push(1), outcome: 'parked', code: 'retries-exhausted' });
    const first = recorder.flush();
    recorder.note(push(1), 'cancelled');
    await Promise.all([first, recorder.flush()]);
    await recorder.flush();
    expect(stored.map((e) => e.outcome).at(-1)).toBe('cancelled');
  });

  it('keeps at most its bound through a long outage, the newest', async () => {
    const store = flakyStore(3);
    const recorder = createJobOutcomeRecorder(store, logger, 2);
    for (const n of [1, 2, 3]) {
      recorder.note(push(n), 'delivered');
      await recorder.flush();
    }
    await recorder.flush();
    expect(store.stored.map((e) => e.deviceId)).toEqual(['2', '3']);
  });

  // Kept for the next flush like a failover's, it was refused at every flush, every later outcome behind it until the oldest were dropped.
  it('drops an outcome PostgreSQL refuses for a value in it, and writes the rest of its batch', async () => {
    const stored: PushOutcomeEntry[] = [];
    const store = {
      recordOutcomes(entries: readonly PushOutcomeEntry[]) {
        if (entries.some((e) => e.jobId.includes('\u0000'))) return Promise.reject(Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' }));
        stored.push(...entries);
        return Promise.resolve();
      },
    };
    const recorder = createJobOutcomeRecorder(store, logger);
    recorder.note(push(1), 'delivered');
    recorder.note({ ...push(2), jobId: 'j\u0000' }, 'delivered');
    recorder.note(push(3), 'invalid');
    await recorder.flush();
    expect(stored.map((e) => e.deviceId)).toEqual(['1', '3']);
    recorder.note(push(4), 'delivered');
    await recorder.flush();
    expect(stored.map((e) => e.deviceId)).toEqual(['1', '3', '4']);
  });
});
