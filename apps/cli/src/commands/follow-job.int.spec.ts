import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFanoutRepository } from '@herald/db';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { followJob } from './follow-job.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('cli_follow');
  await t.db.apps.upsert({ id: 'demo' });
});
afterAll(async () => t?.drop());

describe('herald send --trace: following a job', () => {
  // Before, an audience job read "targeted 0, in flight 0" while its fan-out began, and the trace ended there.
  it('keeps following an audience job while its fan-out is still expanding', async () => {
    const jobId = randomUUID();
    await createFanoutRepository(t.db.kysely).start({ jobId, app: 'demo', audience: { topic: 'news' }, job: { id: jobId }, acceptedAt: new Date(), size: 3, exact: true });
    const lines: string[] = [];
    const started = performance.now();
    const last = await followJob(t.db, jobId, { timeoutMs: 800, pollMs: 50, write: (l) => lines.push(l) });
    expect(performance.now() - started).toBeGreaterThanOrEqual(800);
    expect(last?.state).toBe('expanding');
    expect(lines).toContain(`still in flight after 800 ms: GET /v1/jobs/${jobId} (and /pushes) shows the rest`);
  });

  it('ends as soon as a user job has nothing in flight', async () => {
    const jobId = randomUUID();
    await t.db.jobs.recordDemux([{ id: jobId, app: 'demo', targeted: 0, outcome: 'fanned-out' }]);
    const lines: string[] = [];
    const last = await followJob(t.db, jobId, { timeoutMs: 5_000, pollMs: 50, write: (l) => lines.push(l) });
    expect(last?.state).toBe('done');
    expect(lines.at(-1)).toBe(`job ${jobId}: targeted 0, delivered 0, invalid 0, failed 0, parked 0, skipped 0, scheduled 0, in flight 0`);
  });
});
