import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { pruneJobs } from './job-prune.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('job_prune');
});
afterAll(() => t.drop());

const DAY = 86_400_000;
const daysAgo = (d: number) => new Date(Date.now() - d * DAY);

/** A job accepted `age` days ago with `outcomes` push outcomes. */
async function job(age: number, outcomes = 2): Promise<string> {
  const id = `job-${randomUUID()}`;
  await sql`insert into jobs (id, app, accepted_at, published_at, targeted) values (${id}, 'demo', ${daysAgo(age).toISOString()}::timestamptz, now(), ${outcomes})`.execute(t.db.kysely);
  for (let i = 0; i < outcomes; i++) {
    await sql`insert into push_outcomes (push_id, job_id, outcome) values (${randomUUID()}::uuid, ${id}, 'delivered')`.execute(t.db.kysely);
  }
  return id;
}
const exists = async (id: string) => (await t.db.kysely.selectFrom('jobs').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
const outcomesOf = async (id: string) => (await t.db.kysely.selectFrom('push_outcomes').select('push_id').where('job_id', '=', id).execute()).length;

describe('pruning jobs past their retention', () => {
  it('deletes old jobs with their outcomes and fan-out checkpoints, keeps recent ones and old ones whose pushes are still to come', async () => {
    const old = await Promise.all([job(40), job(31, 5), job(35, 0)]);
    const recent = await job(5);
    // Old, but a push of it is stored for next month: its status is still changing.
    const waiting = await job(40);
    await sql`insert into scheduled_pushes (platform, due_at, job_id, push_id, payload) values ('apns', now() + interval '30 days', ${waiting}, ${randomUUID()}::uuid, '{}'::json)`.execute(t.db.kysely);
    // Old fan-outs: one done (pruned with its chunks), one still sending (kept).
    const [doneFanout, runningFanout] = await Promise.all([job(40), job(40)]);
    for (const [id, state] of [[doneFanout, 'done'], [runningFanout, 'sending']] as const) {
      await sql`insert into fanouts (job_id, app, audience, job, accepted_at, state) values (${id}, 'demo', '{}'::jsonb, '{}'::jsonb, ${daysAgo(40).toISOString()}::timestamptz, ${state})`.execute(t.db.kysely);
      await sql`insert into fanout_chunks (job_id, chunk_no) values (${id}, 0)`.execute(t.db.kysely);
    }

    expect(await pruneJobs(t.db.kysely, daysAgo(30), 2)).toBe(4);
    for (const id of [...old, doneFanout]) {
      expect(await exists(id)).toBe(false);
      expect(await outcomesOf(id)).toBe(0);
    }
    const { rows: chunks } = await sql<{ job_id: string }>`select job_id from fanout_chunks`.execute(t.db.kysely);
    expect(chunks.map((c) => c.job_id)).toEqual([runningFanout]);
    for (const id of [recent, waiting, runningFanout]) {
      expect(await exists(id)).toBe(true);
      expect(await outcomesOf(id)).toBe(2);
    }
    expect(await pruneJobs(t.db.kysely, daysAgo(30))).toBe(0);
  });

  // Demuxers reach PostgreSQL through a transaction-mode pooler, where a session's advisory lock does not hold: each prune runs its own batches.
  it('two demuxers pruning side by side skip the jobs each other holds, and every old job goes once', async () => {
    const ids = await Promise.all(Array.from({ length: 6 }, () => job(60)));
    const [a, b] = await Promise.all([pruneJobs(t.db.kysely, daysAgo(30), 1), pruneJobs(t.db.kysely, daysAgo(30), 1)]);
    expect(a + b).toBe(ids.length);
    for (const id of ids) expect(await exists(id)).toBe(false);
  });
});
