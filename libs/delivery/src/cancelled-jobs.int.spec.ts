import { randomUUID } from 'node:crypto';
import { cancelJobFully, createCancelledJobsReader } from '@herald/db';
import { createLogger } from '@herald/logging';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelledJobs } from './cancelled-jobs.ts';

const logger = createLogger({ service: 'cancelled-jobs-spec', level: 'silent', format: 'json' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('cancelledjobs');
});
afterAll(() => t.drop());

describe('the cancelled jobs a pusher reads', () => {
  it('include a cancel that waited longer for its job row than the pushers read back, after a later one was seen', async () => {
    const [slow, quick] = [randomUUID(), randomUUID()];
    await t.db.jobs.recordDemux([slow, quick].map((id) => ({ id, app: 'demo', targeted: 1, outcome: 'fanned-out' as const })));
    const jobs = new CancelledJobs(createCancelledJobsReader(t.db.kysely), { intervalMs: 60_000, recheckMs: 0, logger });
    await jobs.refresh();
    // Another session holds the slow job's row (as a fan-out chunk's write does) past the 5 s the pushers read back.
    const holder = new pg.Client({ connectionString: t.url, options: `-c search_path=${t.schema}` });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from jobs where id = $1 for update', [slow]);
      const slowCancel = cancelJobFully(t.db, slow);
      await sleep(5_500);
      await cancelJobFully(t.db, quick);
      await jobs.refresh();
      expect([jobs.has(slow), jobs.has(quick)]).toEqual([false, true]);
      await holder.query('commit');
      await slowCancel;
    } finally {
      await holder.end();
    }
    await jobs.refresh();
    expect(jobs.has(slow)).toBe(true);
  });
});
