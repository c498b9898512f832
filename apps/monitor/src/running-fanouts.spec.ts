import { describe, expect, it } from 'vitest';
import type { RunningFanout } from '@herald/db';
import { cachedRunningFanouts } from './running-fanouts.ts';

describe("the dashboard's running fan-outs", () => {
  it('are read from PostgreSQL at most once per interval, however many dashboards ask; a failed read is tried again', async () => {
    let t = 0;
    let reads = 0;
    let failNext = false;
    const repo = {
      running: async (): Promise<RunningFanout[]> => {
        reads++;
        if (failNext) {
          failNext = false;
          throw new Error('PostgreSQL away');
        }
        return [];
      },
      markSettled: async () => undefined,
    };
    const fanouts = cachedRunningFanouts(repo, 10_000, () => t);
    await Promise.all([fanouts(), fanouts(), fanouts()]);
    t = 9_999;
    await fanouts();
    expect(reads).toBe(1);
    t = 10_000;
    failNext = true;
    await expect(fanouts()).rejects.toThrow('PostgreSQL away');
    await fanouts();
    expect(reads).toBe(3);
  });
});
