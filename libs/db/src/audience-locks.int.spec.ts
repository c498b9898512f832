import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { applyTopicMemberships, createTopic, findTopic } from './topic-store.ts';
import { applyFollowEvents, followerCount } from './follow-edges.ts';

// Two batches writing the same count rows (topics, followees) at once, from two registrar replicas
// or two API requests. The count triggers run after the upsert, the UPDATE one before the INSERT
// one, so a batch locked the counts of its changed members, then those of its new members. To
// make the interleaving certain, each batch is held between those two triggers by a statement
// trigger of this spec's own schema that waits on an advisory lock the spec holds.

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('audience_locks');
  await t.db.apps.upsert({ id: 'app-l' });
});
afterAll(() => t?.drop());

const BEFORE = '2026-01-01T00:00:00Z';
const AFTER = '2026-01-02T00:00:00Z';

/** How many backends wait, directly or behind another waiter, on the backend `pid`. */
async function waitingBehind(pid: number): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    with recursive w(pid) as (
      select a.pid from pg_stat_activity a where ${pid}::int = any(pg_blocking_pids(a.pid))
      union
      select a.pid from pg_stat_activity a join w on w.pid = any(pg_blocking_pids(a.pid))
    ) select count(*) as n from w`.execute(t.db.kysely);
  return Number(rows[0]?.n);
}

/**
 * Runs `batches` at once while every statement inserting into `table` is held after its UPDATE
 * triggers; lets them go once `waiters` statements wait. Returns how each batch ended.
 */
async function heldBetweenTriggers(table: 'topic_members' | 'follows', waiters: number, batches: readonly (() => Promise<unknown>)[]): Promise<PromiseSettledResult<unknown>[]> {
  const key = randomInt(1, 2 ** 31);
  await sql`create function spec_pause() returns trigger language plpgsql as $$ begin perform pg_advisory_xact_lock_shared(${sql.lit(key)}); return null; end $$`.execute(t.db.kysely);
  // Named to fire first of the AFTER INSERT statement triggers (alphabetical order).
  await sql`create trigger ${sql.raw(`${table}_a_spec_pause`)} after insert on ${sql.table(table)} for each statement execute function spec_pause()`.execute(t.db.kysely);
  try {
    let running: Promise<PromiseSettledResult<unknown>[]> | undefined;
    await t.db.kysely.transaction().execute(async (tx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid, pg_advisory_xact_lock(${key})`.execute(tx);
      const holder = rows[0]?.pid as number;
      running = Promise.allSettled(batches.map((b) => b()));
      for (let i = 0; (await waitingBehind(holder)) < waiters; i++) {
        if (i > 500) throw new Error(`the batches did not reach the pause: ${await waitingBehind(holder)} waiting`);
        await new Promise((r) => setTimeout(r, 10));
      }
    });
    return await (running as Promise<PromiseSettledResult<unknown>[]>);
  } finally {
    await sql`drop function spec_pause() cascade`.execute(t.db.kysely);
  }
}

const failures = (settled: readonly PromiseSettledResult<unknown>[]) => settled.flatMap((s) => (s.status === 'rejected' ? [String((s.reason as { code?: string }).code ?? s.reason)] : []));

describe('concurrent membership and follow batches on the same count rows', () => {
  it('two topic batches, each unsubscribing from one topic and newly subscribing to the other, both complete (40P01 before)', async () => {
    await createTopic(t.db.kysely, 'app-l', 'topic-a');
    await createTopic(t.db.kysely, 'app-l', 'topic-b');
    const ev = (topic: string, userId: string, subscribed: boolean, eventAt: string) => ({ app: 'app-l', topic, member: { userId }, subscribed, eventAt });
    await applyTopicMemberships(t.db.kysely, [ev('topic-a', 'alice', true, BEFORE), ev('topic-b', 'carol', true, BEFORE)]);
    const settled = await heldBetweenTriggers('topic_members', 2, [
      () => applyTopicMemberships(t.db.kysely, [ev('topic-a', 'alice', false, AFTER), ev('topic-b', 'bob', true, AFTER)]),
      () => applyTopicMemberships(t.db.kysely, [ev('topic-b', 'carol', false, AFTER), ev('topic-a', 'dave', true, AFTER)]),
    ]);
    expect(failures(settled)).toEqual([]);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined))).toEqual([['applied', 'applied'], ['applied', 'applied']]);
    expect((await findTopic(t.db.kysely, 'app-l', 'topic-a'))?.subscribers).toBe(1); // dave
    expect((await findTopic(t.db.kysely, 'app-l', 'topic-b'))?.subscribers).toBe(1); // bob
  });

  it('two follow batches, each unfollowing one followee and newly following the other, both complete (40P01 before)', async () => {
    const ev = (followee: string, follower: string, following: boolean, eventAt: string) => ({ app: 'app-l', followee, follower, following, eventAt });
    await applyFollowEvents(t.db.kysely, [ev('star-a', 'alice', true, BEFORE), ev('star-b', 'carol', true, BEFORE)]);
    const settled = await heldBetweenTriggers('follows', 2, [
      () => applyFollowEvents(t.db.kysely, [ev('star-a', 'alice', false, AFTER), ev('star-b', 'bob', true, AFTER)]),
      () => applyFollowEvents(t.db.kysely, [ev('star-b', 'carol', false, AFTER), ev('star-a', 'dave', true, AFTER)]),
    ]);
    expect(failures(settled)).toEqual([]);
    expect(await followerCount(t.db.kysely, 'app-l', 'star-a')).toBe(1); // dave
    expect(await followerCount(t.db.kysely, 'app-l', 'star-b')).toBe(1); // bob
  });

  it('a subscribe that waited on a topic being deleted is unknown-topic, not a foreign-key violation (23503 before)', async () => {
    await createTopic(t.db.kysely, 'app-l', 'doomed');
    let subscribing: Promise<unknown> | undefined;
    await t.db.kysely.transaction().execute(async (tx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx);
      await sql`delete from topics where app = 'app-l' and name = 'doomed'`.execute(tx);
      subscribing = applyTopicMemberships(t.db.kysely, [{ app: 'app-l', topic: 'doomed', member: { userId: 'erin' }, subscribed: true, eventAt: AFTER }]).catch((err: unknown) => err);
      for (let i = 0; (await waitingBehind(rows[0]?.pid as number)) < 1; i++) {
        if (i > 500) throw new Error('the subscribe did not wait on the delete');
        await new Promise((r) => setTimeout(r, 10));
      }
    });
    expect(await subscribing).toEqual(['unknown-topic']);
  });
});
