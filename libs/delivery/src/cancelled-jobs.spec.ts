import { createLogger } from '@herald/logging';
import { describe, expect, it } from 'vitest';
import { CancelledJobs } from './cancelled-jobs.ts';

const logger = createLogger({ service: 'test', level: 'silent', format: 'json' });

describe('CancelledJobs', () => {
  it('learns cancelled jobs at each refresh, re-reads a small overlap, and forgets those past retention', async () => {
    const rows: Array<{ jobId: string; cancelledAt: Date }> = [];
    const asked: Date[] = [];
    const jobs = new CancelledJobs(
      {
        since: async (since, limit) => {
          asked.push(since);
          return rows.filter((r) => r.cancelledAt > since).slice(0, limit);
        },
      },
      { intervalMs: 1000, retentionMs: 60_000, logger },
    );
    rows.push({ jobId: 'old', cancelledAt: new Date(Date.now() - 120_000) }, { jobId: 'a', cancelledAt: new Date(Date.now() - 1000) });
    await jobs.refresh();
    expect([jobs.has('a'), jobs.has('old'), jobs.has('b')]).toEqual([true, false, false]);
    // A cancel committed late, with a timestamp just before the last one seen, is still picked up.
    rows.push({ jobId: 'b', cancelledAt: new Date(Date.now() - 2000) });
    await jobs.refresh();
    expect(jobs.has('b')).toBe(true);
    expect(jobs.size).toBe(2);
    expect((asked[1] as Date).getTime()).toBeLessThan(Date.now() - 1000);
  });
});
