import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { derivePushId } from '@herald/contracts';
import { createDatabase } from './database.ts';
import { toJobStatus } from './job-status-view.ts';
import { startReplayedOutcomes } from './replayed-outcomes.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('replayed');
  await t.db.apps.upsert({ id: 'demo' });
});
afterAll(() => t.drop());

const statusOf = async (job: string) => {
  const record = await t.db.jobs.status(job);
  if (record === undefined) throw new Error(`no job ${job}`);
  const s = toJobStatus(record);
  return { state: s.state, inFlight: s.inFlight, delivered: s.delivered, parked: s.parked, failed: s.failed };
};

/** A job of `devices.length` pushes, fanned out. */
async function fannedOut(devices: string[]): Promise<{ job: string; p: (d: string) => string }> {
  const job = randomUUID();
  await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: devices.length, outcome: 'fanned-out' }]);
  return { job, p: (d: string) => derivePushId(job, d) };
}

describe('a replay of parked device pushes: their jobs count them in flight again', () => {
  it('clears a replayed push parked: the done job reads sending with it in flight, then done again with its new outcome', async () => {
    const { job, p } = await fannedOut(['1', '2']);
    await t.db.jobs.recordOutcomes([
      { pushId: p('1'), jobId: job, outcome: 'delivered' },
      { pushId: p('2'), jobId: job, outcome: 'parked', code: 'provider-down', reason: 'APNs did not answer' },
    ]);
    expect(await statusOf(job)).toEqual({ state: 'done', inFlight: 0, delivered: 1, parked: 1, failed: 0 });
    const outcomes = await startReplayedOutcomes(t.db.kysely);
    // The delivered one too, as a replay of a duplicate would name it: it stays delivered.
    await outcomes.onReplayed([
      { pushId: p('2'), jobId: job },
      { pushId: p('1'), jobId: job },
    ]);
    expect([outcomes.cleared, outcomes.failure]).toEqual([1, undefined]);
    expect(await statusOf(job)).toEqual({ state: 'sending', inFlight: 1, delivered: 1, parked: 0, failed: 0 });
    await t.db.jobs.recordOutcomes([{ pushId: p('2'), jobId: job, outcome: 'delivered' }]);
    expect(await statusOf(job)).toEqual({ state: 'done', inFlight: 0, delivered: 2, parked: 0, failed: 0 });
  });

  it('clears a failed push (a forced replay), keeps a copy parked again after the replay began, and one the ledger holds done', async () => {
    const { job, p } = await fannedOut(['f', 'again', 'done']);
    await t.db.jobs.recordOutcomes([
      { pushId: p('f'), jobId: job, outcome: 'failed', code: 'provider-rejected' },
      { pushId: p('done'), jobId: job, outcome: 'parked', code: 'app-disabled' },
    ]);
    // Sent before (ledger done), then a duplicate copy parked at the door: its replayed copy is acked
    // unsent and writes no outcome, so clearing it would leave it in flight for good.
    await t.db.ledger.complete([{ pushId: p('done'), outcome: 'invalid-token' }]);
    const outcomes = await startReplayedOutcomes(t.db.kysely);
    // The copy of `again`, its app still disabled, parked again before the replay's statement ran.
    await t.db.jobs.recordOutcomes([{ pushId: p('again'), jobId: job, outcome: 'parked', code: 'app-disabled' }]);
    await outcomes.onReplayed(['f', 'again', 'done'].map((d) => ({ pushId: p(d), jobId: job })));
    expect(outcomes.cleared).toBe(1);
    expect(await statusOf(job)).toEqual({ state: 'sending', inFlight: 1, delivered: 0, parked: 2, failed: 0 });
  });

  it("ignores ids no push has (a body that only looks like a push) and another job's push of the same id", async () => {
    const { job, p } = await fannedOut(['1']);
    await t.db.jobs.recordOutcomes([{ pushId: p('1'), jobId: job, outcome: 'parked', code: 'retries-exhausted' }]);
    const outcomes = await startReplayedOutcomes(t.db.kysely);
    await outcomes.onReplayed([
      { pushId: 'held-1', jobId: job },
      { pushId: p('1'), jobId: 'another-job' },
      { pushId: p('1'), jobId: 'x'.repeat(1000) },
    ]);
    expect([outcomes.cleared, outcomes.failure]).toEqual([0, undefined]);
    expect(await statusOf(job)).toMatchObject({ state: 'done', parked: 1 });
  });

  it('says why, and never rejects, when PostgreSQL refuses the clearing', async () => {
    const { job, p } = await fannedOut(['1']);
    await t.db.jobs.recordOutcomes([{ pushId: p('1'), jobId: job, outcome: 'parked', code: 'retries-exhausted' }]);
    const outcomes = await startReplayedOutcomes(t.db.kysely);
    await sqlRefusingUpdates(true);
    try {
      await outcomes.onReplayed([{ pushId: p('1'), jobId: job }]);
    } finally {
      await sqlRefusingUpdates(false);
    }
    expect(outcomes.cleared).toBe(0);
    expect(outcomes.failure).toMatch(/^the parked outcomes of 1 replayed push\(es\) could not be cleared \(PostgreSQL: .*no updates here.*\): their jobs count them parked/);
    expect(await statusOf(job)).toMatchObject({ state: 'done', parked: 1 });
    // No database at all: the clock is not read, and the pushes are said not cleared.
    const away = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', schema: t.schema });
    try {
      const unreachable = await startReplayedOutcomes(away.kysely);
      await unreachable.onReplayed([{ pushId: p('1'), jobId: job }]);
      expect(unreachable.failure).toMatch(/^the parked outcomes of 1 replayed push\(es\) could not be cleared \(PostgreSQL: /);
    } finally {
      await away.close();
    }
  });
});

/** A trigger in this spec's schema that refuses every update of push_outcomes (on), or none (off). */
async function sqlRefusingUpdates(on: boolean): Promise<void> {
  if (on) {
    await sql`create or replace function refuse_deletes() returns trigger language plpgsql as $$ begin raise exception 'no updates here'; end $$`.execute(t.db.kysely);
    await sql`create trigger refuse_deletes before update on push_outcomes for each statement execute function refuse_deletes()`.execute(t.db.kysely);
  } else {
    await sql`drop trigger refuse_deletes on push_outcomes`.execute(t.db.kysely);
  }
}
