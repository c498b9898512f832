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
});
