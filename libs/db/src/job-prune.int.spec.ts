import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { derivePushId, type DevicePush } from '@herald/contracts';
import { createSpecDatabase, specDevicePush, type SpecDatabase } from './spec-database.ts';
import { pruneJobs, pruneOrphanOutcomes } from './job-prune.ts';
import { upsertOutcomes } from './push-outcomes.ts';

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
    // Old fan-outs: one done (pruned with its chunks), one still sending, a push of it in flight (kept).
    const [doneFanout, runningFanout] = await Promise.all([job(40), job(40)]);
    await sql`update jobs set targeted = targeted + 1 where id = ${runningFanout}`.execute(t.db.kysely);
    for (const [id, state] of [[doneFanout, 'done'], [runningFanout, 'sending']] as const) {
      await sql`insert into fanouts (job_id, app, audience, job, accepted_at, state) values (${id}, 'demo', '{}'::jsonb, '{}'::jsonb, ${daysAgo(40).toISOString()}::timestamptz, ${state})`.execute(t.db.kysely);
      await sql`insert into fanout_chunks (job_id, chunk_no) values (${id}, 0)`.execute(t.db.kysely);
    }

    // Sending, an outcome missing (a pusher lost it in an outage), expanded 35 days ago: pruned, not kept for good.
    // One expanded 20 days ago is kept (a broadcast an app's budget paces over days is still at work).
    const [stuckFanout, slowFanout] = await Promise.all([job(40), job(40)]);
    for (const [id, expandedDaysAgo] of [[stuckFanout, 35], [slowFanout, 20]] as const) {
      await sql`update jobs set targeted = targeted + 1 where id = ${id}`.execute(t.db.kysely);
      await sql`insert into fanouts (job_id, app, audience, job, accepted_at, state, updated_at) values (${id}, 'demo', '{}'::jsonb, '{}'::jsonb, ${daysAgo(40).toISOString()}::timestamptz, 'sending', ${daysAgo(expandedDaysAgo).toISOString()}::timestamptz)`.execute(t.db.kysely);
    }

    expect(await pruneJobs(t.db.kysely, daysAgo(30), 2)).toBe(5);
    for (const id of [...old, doneFanout, stuckFanout]) {
      expect(await exists(id)).toBe(false);
      expect(await outcomesOf(id)).toBe(0);
    }
    const { rows: chunks } = await sql<{ job_id: string }>`select job_id from fanout_chunks`.execute(t.db.kysely);
    expect(chunks.map((c) => c.job_id)).toEqual([runningFanout]);
    for (const id of [recent, waiting, runningFanout, slowFanout]) {
      expect(await exists(id)).toBe(true);
      expect(await outcomesOf(id)).toBe(2);
    }
    expect(await pruneJobs(t.db.kysely, daysAgo(30))).toBe(0);
    // A short retention (2 days) does not cut a running fan-out short: STUCK_FANOUT_DAYS holds.
    expect(await pruneJobs(t.db.kysely, daysAgo(2))).toBe(1);
    expect(await exists(slowFanout)).toBe(true);
  });

  // Demuxers reach PostgreSQL through a transaction-mode pooler, where a session's advisory lock does not hold: each prune runs its own batches.
  it('two demuxers pruning side by side skip the jobs each other holds, and every old job goes once', async () => {
    const ids = await Promise.all(Array.from({ length: 6 }, () => job(60)));
    const [a, b] = await Promise.all([pruneJobs(t.db.kysely, daysAgo(30), 1), pruneJobs(t.db.kysely, daysAgo(30), 1)]);
    expect(a + b).toBe(ids.length);
    for (const id of ids) expect(await exists(id)).toBe(false);
  });
});

describe('a job accepted long ago and demuxed now (a parked job an operator replays)', () => {
  // Before, its new row, accepted_at its own month-old stamp, went with its outcomes at the next
  // hourly prune while its pushes were still in retry: status 404, its id free, the ledger keeping its push ids.
  it('keeps its row and outcomes for the retention from its demux, showing when it was accepted; one demuxed as long ago goes', async () => {
    const [replayed, reparked] = [`job-${randomUUID()}`, `job-${randomUUID()}`];
    const stamp = daysAgo(31);
    await t.db.jobs.recordDemux([{ id: replayed, app: 'demo', targeted: 2, outcome: 'sent', acceptedAt: stamp }]);
    await upsertOutcomes(t.db.kysely, [{ jobId: replayed, pushId: derivePushId(replayed, '1'), outcome: 'delivered' }]);
    // Parked again at once (its app still disabled), the park recorded with its stamp: kept as long.
    await t.db.jobs.recordJobParks([{ id: reparked, app: 'demo', code: 'app-disabled', reason: 'app "demo" is disabled', acceptedAt: stamp }]);
    // Accepted 40 days ago, demuxed 35 days ago: past the retention either way.
    const old = await job(40);
    await sql`update jobs set demuxed_at = ${daysAgo(35).toISOString()}::timestamptz where id = ${old}`.execute(t.db.kysely);

    expect(await pruneJobs(t.db.kysely, daysAgo(30))).toBe(1);
    expect(await exists(old)).toBe(false);
    for (const id of [replayed, reparked]) expect(await exists(id)).toBe(true);
    expect((await t.db.jobs.status(replayed))?.outcomes).toEqual({ delivered: 1 });
    expect((await t.db.jobs.get(replayed))?.acceptedAt.getTime()).toBe(stamp.getTime());
  });
});

describe('pruning a job with more outcomes than one statement deletes', () => {
  it('deletes its outcomes a slice a statement, the job only with its last, and a stopped prune is finished by the next', async () => {
    const big = await job(50, 10);
    const small = await job(45, 2);
    // Each of the prune's statements commits on its own: after each, the outcomes left of each job ('gone' with its row).
    const left = async (id: string) => {
      const n = await outcomesOf(id);
      return (await exists(id)) ? n : n === 0 ? 'gone' : `gone, ${n} outcomes left`;
    };
    let seen: unknown[][] = [];
    const stop = new AbortController();
    const watched = t.db.kysely.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        seen.push([await left(big), await left(small)]);
        // Stopped after settleSentFanouts and one slice (a demuxer shutting down).
        if (seen.length === 2) stop.abort();
        return args.result;
      },
    });

    expect(await pruneJobs(watched, daysAgo(30), 100, stop.signal, 3)).toBe(0);
    expect(seen).toEqual([
      [10, 2],
      [7, 2],
    ]);

    // The next run goes on with the half-deleted job, three outcomes a statement, across both jobs.
    seen = [];
    expect(await pruneJobs(watched, daysAgo(30), 100, undefined, 3)).toBe(2);
    expect(seen).toEqual([
      [7, 2],
      [4, 2],
      [1, 2],
      ['gone', 'gone'],
      ['gone', 'gone'],
    ]);
  });
});

/** A device push of `jobId` to device `device`, as the demuxer stores it for later. */
const devicePush = (jobId: string, device: string): DevicePush =>
  specDevicePush(jobId, device, { token: `token-${device}`, userId: `u${device}`, acceptedAt: daysAgo(45).toISOString() });

describe('a job scheduled further ahead than the retention', () => {
  it('keeps its status for the retention after its pushes fall due, not after its acceptance', async () => {
    // Accepted 45 days ago with deliverAt 45 days ahead: its pushes fall due now.
    const id = await job(45, 0);
    const pushes = ['1', '2'].map((d) => ({ dueAt: new Date(Date.now() - 1000), push: devicePush(id, d) }));
    expect(await t.db.scheduled.schedule(pushes)).toBe(2);
    // Stored again by a redelivered job, or another chunk due earlier: the latest due time stays.
    await t.db.scheduled.schedule([{ dueAt: daysAgo(35), push: devicePush(id, '3') }]);
    // The descheduler releases them (claimed and deleted from the store); one is delivered at once,
    // the other is still retrying when the hourly prune runs.
    expect(await t.db.scheduled.withDueBatch('apns', new Date(), 10, async () => undefined)).toBe(3);
    await upsertOutcomes(t.db.kysely, [{ jobId: id, pushId: derivePushId(id, '1'), outcome: 'delivered' }]);

    expect(await pruneJobs(t.db.kysely, daysAgo(30))).toBe(0);
    const status = await t.db.jobs.status(id);
    expect(status?.outcomes).toEqual({ delivered: 1 });

    // The retried push delivered later still counts for the job.
    await upsertOutcomes(t.db.kysely, [{ jobId: id, pushId: derivePushId(id, '2'), outcome: 'delivered' }]);
    expect((await t.db.jobs.status(id))?.outcomes).toEqual({ delivered: 2 });

    // The retention after its last due time: the job goes with its outcomes.
    await pruneJobs(t.db.kysely, new Date(Date.now() + 1000));
    expect(await exists(id)).toBe(false);
    expect(await outcomesOf(id)).toBe(0);
  });
});

describe('pruning outcomes whose job is gone', () => {
  it('deletes outcomes written after their job was pruned, keeps every outcome of a job still there', async () => {
    const live = await Promise.all([job(1, 3), job(2, 1)]);
    // Jobs pruned, then a push of each delivered late (a retry, a replay from its parked queue).
    const gone = await Promise.all([job(60, 0), job(60, 0), job(60, 0)]);
    await pruneJobs(t.db.kysely, daysAgo(30));
    for (const id of gone) expect(await exists(id)).toBe(false);
    await upsertOutcomes(
      t.db.kysely,
      gone.flatMap((id) => ['1', '2'].map((d) => ({ jobId: id, pushId: derivePushId(id, d), outcome: 'delivered' as const }))),
    );
    // The job prune never reaches them: it deletes outcomes only with their job.
    expect(await pruneJobs(t.db.kysely, daysAgo(30))).toBe(0);
    expect(await outcomesOf(gone[0] as string)).toBe(2);

    // One job id a statement: the walk goes on from where the last statement stopped.
    expect(await pruneOrphanOutcomes(t.db.kysely, 1)).toBe(6);
    for (const id of gone) expect(await outcomesOf(id)).toBe(0);
    expect(await Promise.all(live.map(outcomesOf))).toEqual([3, 1]);
    expect(await pruneOrphanOutcomes(t.db.kysely)).toBe(0);
  });

  it('walks a bounded part of the table a run and goes on from there the next run, wrapping round at the end', async () => {
    const gone = await Promise.all([job(60, 0), job(60, 0)]);
    await pruneJobs(t.db.kysely, daysAgo(30));
    await upsertOutcomes(t.db.kysely, gone.map((id) => ({ jobId: id, pushId: derivePushId(id, '1'), outcome: 'delivered' as const })));
    const live = await job(1, 1);
    // Every job id of push_outcomes, in the walk's order: one statement a run looks at one.
    const ids = (await sql<{ job_id: string }>`select distinct job_id from push_outcomes order by job_id`.execute(t.db.kysely)).rows.map((r) => r.job_id);
    const cursor = { after: null as string | null };
    let deleted = 0;
    for (let run = 1; run <= ids.length; run++) {
      deleted += await pruneOrphanOutcomes(t.db.kysely, 1, undefined, cursor, 1);
      // A run of one statement stops there; the orphans it has passed are gone, those after it not yet.
      expect(cursor.after).toBe(ids[run - 1]);
      const passed = gone.filter((id) => id <= (cursor.after as string));
      for (const id of passed) expect(await outcomesOf(id)).toBe(0);
      for (const id of gone.filter((g) => !passed.includes(g))) expect(await outcomesOf(id)).toBe(1);
    }
    expect(deleted).toBe(2);
    expect(await outcomesOf(live)).toBe(1);
    // The next run finds the end and starts again from the beginning.
    expect(await pruneOrphanOutcomes(t.db.kysely, 1, undefined, cursor, 1)).toBe(0);
    expect(cursor.after).toBeNull();
  });
});
