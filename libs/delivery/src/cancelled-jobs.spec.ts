import { createLogger } from '@herald/logging';
import { describe, expect, it } from 'vitest';
import { CancelledJobs } from './cancelled-jobs.ts';
import { DEFAULT_PREFERENCES_RECHECK_MS } from './pusher.ts';

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
      { intervalMs: 1000, recheckMs: 60_000, marginMs: 0, logger },
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

  it("holds the cancels a push that skips its claim's recheck may need (younger than PREFERENCES_RECHECK_AFTER_MS, and an hour for clocks), not a week of them", async () => {
    const ago = (ms: number) => new Date(Date.now() - ms);
    const rows = [row('last-week', ago(6 * 86_400_000)), row('two-hours', ago(2 * 3_600_000)), row('half-hour', ago(30 * 60_000)), row('now', ago(1000))];
    const jobs = new CancelledJobs({ since: async (since) => rows.filter((r) => r.cancelledAt > since) }, { intervalMs: 1000, recheckMs: DEFAULT_PREFERENCES_RECHECK_MS, logger });
    await jobs.refresh();
    expect(['last-week', 'two-hours', 'half-hour', 'now'].map((id) => jobs.has(id))).toEqual([false, false, true, true]);
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
      { intervalMs: 1000, recheckMs: 60_000, marginMs: 0, logger },
    );
    await jobs.refresh();
    expect(jobs.size).toBe(10_050);
    expect(pages).toBe(2);
  });
});
