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

  // A read slower than the interval (a million outcomes to count) was joined by a second, then a third.
  it('shares a read under way however long it takes, and counts the interval from its end', async () => {
    let t = 0;
    let reads = 0;
    let finish!: () => void;
    const repo = {
      running: (): Promise<RunningFanout[]> => {
        reads++;
        return new Promise((resolve) => (finish = () => resolve([])));
      },
      markSettled: async () => undefined,
    };
    const fanouts = cachedRunningFanouts(repo, 10_000, () => t);
    const first = fanouts();
    t = 25_000;
    const second = fanouts();
    expect(reads).toBe(1);
    finish();
    await Promise.all([first, second]);
    t = 34_999;
    await fanouts();
    expect(reads).toBe(1);
  });
});
