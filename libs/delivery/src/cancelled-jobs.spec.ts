import { createLogger } from '@herald/logging';
import { describe, expect, it } from 'vitest';
import { CancelledJobs } from './cancelled-jobs.ts';

const logger = createLogger({ service: 'test', level: 'silent', format: 'json' });
const row = (jobId: string, cancelledAt: Date): { jobId: string; cancelledAt: Date; at: string } => ({ jobId, cancelledAt, at: cancelledAt.toISOString() });

describe('CancelledJobs', () => {
  it('learns cancelled jobs at each refresh, re-reads a small overlap, and forgets those past retention', async () => {
    const rows: Array<{ jobId: string; cancelledAt: Date; at: string }> = [];
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
    rows.push(row('old', new Date(Date.now() - 120_000)), row('a', new Date(Date.now() - 1000)));
    await jobs.refresh();
    expect([jobs.has('a'), jobs.has('old'), jobs.has('b')]).toEqual([true, false, false]);
    // A cancel committed late, with a timestamp just before the last one seen, is still picked up.
    rows.push(row('b', new Date(Date.now() - 2000)));
    await jobs.refresh();
    expect(jobs.has('b')).toBe(true);
    expect(jobs.size).toBe(2);
    expect((asked[1] as Date).getTime()).toBeLessThan(Date.now() - 1000);
  });

  it('ends a poll when more than a page of cancellations share one timestamp (keyset by cancelled_at, id)', async () => {
    const at = new Date(Date.now() - 1000);
    const rows = Array.from({ length: 10_050 }, (_, i) => row(`job-${String(i).padStart(5, '0')}`, at));
    let pages = 0;
    const jobs = new CancelledJobs(
      {
        since: async (since, limit, after) => {
          pages += 1;
          if (pages > 10) throw new Error('the poll does not move on');
          return rows.filter((r) => r.cancelledAt > since && (after === undefined || r.at > after.at || (r.at === after.at && r.jobId > after.jobId))).slice(0, limit);
        },
      },
      { intervalMs: 1000, retentionMs: 60_000, logger },
    );
    await jobs.refresh();
    expect(jobs.size).toBe(10_050);
    expect(pages).toBe(2);
  });
});
