import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { applyTopicMemberships, createTopic, findTopic, type TopicMemberEvent } from './topic-store.ts';
import { deleteTopic } from './topic-deletion.ts';
import { audienceProblem } from './fanout-audience-check.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('topic_deletion');
  await t.db.apps.upsert({ id: 'app-d' });
});
afterAll(() => t?.drop());

const MINUTE = 60_000;
const at = (ms: number) => new Date(Date.now() + ms).toISOString();
const subscribe = (topic: string, userId: string, eventAt: string, subscribed = true) =>
  applyTopicMemberships(t.db.kysely, [{ app: 'app-d', topic, member: { userId }, subscribed, eventAt } satisfies TopicMemberEvent]);
const members = async (topic: string) =>
  (await t.db.kysely.selectFrom('topic_members').select('member_id').where('app', '=', 'app-d').where('topic', '=', topic).where('subscribed', '=', true).orderBy('member_id').execute()).map((r) => r.member_id);
const memberRows = async (topic: string) =>
  Number((await t.db.kysely.selectFrom('topic_members').select((eb) => eb.fn.countAll<string>().as('n')).where('app', '=', 'app-d').where('topic', '=', topic).executeTakeFirstOrThrow()).n);
const deletedAt = async (topic: string) =>
  (await t.db.kysely.selectFrom('topic_deletions').select('deleted_at').where('app', '=', 'app-d').where('topic', '=', topic).executeTakeFirstOrThrow()).deleted_at;

describe('a topic deleted and created again', () => {
  it('does not take back a member by a subscribe from before the deletion delivered late; one from after it joins', async () => {
    await createTopic(t.db.kysely, 'app-d', 'news');
    const t1 = at(-60 * MINUTE);
    expect(await subscribe('news', 'alice', t1)).toEqual(['applied']);
    expect(await deleteTopic(t.db.kysely, 'app-d', 'news')).toBe(true);
    const t2 = await deletedAt('news');
    expect(t2.getTime()).toBeGreaterThan(Date.parse(t1));
    await createTopic(t.db.kysely, 'app-d', 'news');
    // The registrar's backlog delivers alice's subscribe (t1 < t2), and one stamped at the deletion itself.
    expect(await subscribe('news', 'alice', t1)).toEqual(['stale']);
    expect(await subscribe('news', 'bob', t2.toISOString())).toEqual(['stale']);
    expect(await members('news')).toEqual([]);
    expect((await findTopic(t.db.kysely, 'app-d', 'news'))?.subscribers).toBe(0);
    // A subscribe after the deletion joins the new topic.
    expect(await subscribe('news', 'alice', new Date(t2.getTime() + 1).toISOString())).toEqual(['applied']);
    expect(await members('news')).toEqual(['alice']);
  });

  // A deletion moved on to its members' times (up to 5 minutes ahead, for a phone whose clock runs
  // fast) held every subscribe to the topic created again stale for those minutes: one member's clock
  // closed the topic to everyone.
  it('takes a subscribe made just after the topic is created again, whatever the clocks of its old members', async () => {
    await createTopic(t.db.kysely, 'app-d', 'fast');
    expect(await subscribe('fast', 'carol', at(3 * MINUTE))).toEqual(['applied']);
    expect(await subscribe('fast', 'dave', at(24 * 60 * MINUTE))).toEqual(['applied']);
    expect(await deleteTopic(t.db.kysely, 'app-d', 'fast')).toBe(true);
    expect((await deletedAt('fast')).getTime()).toBeLessThanOrEqual(Date.now());
    await createTopic(t.db.kysely, 'app-d', 'fast');
    expect(await subscribe('fast', 'erin', at(1_000))).toEqual(['applied']);
    expect(await members('fast')).toEqual(['erin']);
  });

  it('takes an import of old times into a topic never deleted', async () => {
    await createTopic(t.db.kysely, 'app-d', 'imported');
    const results = await applyTopicMemberships(
      t.db.kysely,
      ['2019-03-01T00:00:00Z', '2020-06-15T12:00:00Z'].map((eventAt, i) => ({ app: 'app-d', topic: 'imported', member: { userId: `old-${i}` }, subscribed: true, eventAt })),
    );
    expect(results).toEqual(['applied', 'applied']);
    expect(await members('imported')).toEqual(['old-0', 'old-1']);
  });

  it('created again after a deletion cut short (its members not yet removed) starts with no members', async () => {
    await createTopic(t.db.kysely, 'app-d', 'cut');
    expect(await subscribe('cut', 'frank', at(-MINUTE))).toEqual(['applied']);
    // The topic's row went, its member batches never ran (the process stopped).
    await sql`delete from topics where app = 'app-d' and name = 'cut'`.execute(t.db.kysely);
    expect(await memberRows('cut')).toBe(1);
    expect((await createTopic(t.db.kysely, 'app-d', 'cut')).topic.subscribers).toBe(0);
    expect(await memberRows('cut')).toBe(0);
  });

  it('deleting again finishes a deletion cut short, answering that there is no such topic', async () => {
    await createTopic(t.db.kysely, 'app-d', 'cut-again');
    expect(await subscribe('cut-again', 'gina', at(-MINUTE))).toEqual(['applied']);
    await sql`delete from topics where app = 'app-d' and name = 'cut-again'`.execute(t.db.kysely);
    expect(await deleteTopic(t.db.kysely, 'app-d', 'cut-again')).toBe(false);
    expect(await memberRows('cut-again')).toBe(0);
  });
});

describe('deleting a topic of many members', () => {
  const MEMBERS = 25_000;
  const BATCH = 10_000;

  /** The rows each DELETE statement on topic_members removed, in order, from a statement trigger of this spec's schema. */
  async function countingDeletes<T>(run: () => Promise<T>): Promise<{ result: T; statements: number[] }> {
    await sql`create table spec_deletes (id serial primary key, n bigint not null)`.execute(t.db.kysely);
    await sql`create function spec_count_deletes() returns trigger language plpgsql as $$ begin insert into spec_deletes (n) select count(*) from gone; return null; end $$`.execute(t.db.kysely);
    await sql`create trigger topic_members_spec_deletes after delete on topic_members referencing old table as gone for each statement execute function spec_count_deletes()`.execute(t.db.kysely);
    try {
      const result = await run();
      const { rows } = await sql<{ n: string }>`select n from spec_deletes order by id`.execute(t.db.kysely);
      return { result, statements: rows.map((r) => Number(r.n)) };
    } finally {
      await sql`drop table spec_deletes; drop function spec_count_deletes() cascade`.execute(t.db.kysely);
    }
  }

  it(`removes ${MEMBERS} members in statements of at most ${BATCH}, after the topic is gone; nothing remains and a job to it is refused`, async () => {
    await createTopic(t.db.kysely, 'app-d', 'huge');
    await sql`
      insert into topic_members (app, topic, member_kind, member_id, subscribed, event_at)
      select 'app-d', 'huge', 'user', 'u' || g, true, now() - interval '1 day' from generate_series(1, ${MEMBERS}) g`.execute(t.db.kysely);
    expect((await findTopic(t.db.kysely, 'app-d', 'huge'))?.subscribers).toBe(MEMBERS);
    // A member row held by another transaction stops the first batch: the topic is already gone by then.
    let deleting: Promise<{ result: boolean; statements: number[] }> | undefined;
    await t.db.kysely.transaction().execute(async (tx) => {
      await sql`select 1 from topic_members where app = 'app-d' and topic = 'huge' and member_id = 'u1' for update`.execute(tx);
      deleting = countingDeletes(() => deleteTopic(t.db.kysely, 'app-d', 'huge', { batchSize: BATCH }));
      for (let i = 0; (await findTopic(t.db.kysely, 'app-d', 'huge')) !== undefined; i++) {
        if (i > 500) throw new Error('the topic was not deleted before its members');
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(await audienceProblem(t.db.kysely, 'app-d', { topic: 'huge' })).toBe('unknown topic "huge" of app "app-d"');
      expect(await subscribe('huge', 'late', at(0))).toEqual(['unknown-topic']);
    });
    const { result, statements } = await (deleting as Promise<{ result: boolean; statements: number[] }>);
    expect(result).toBe(true);
    expect(statements.filter((n) => n > 0)).toEqual([BATCH, BATCH, MEMBERS - 2 * BATCH]);
    expect(await memberRows('huge')).toBe(0);
    expect(await audienceProblem(t.db.kysely, 'app-d', { topic: 'huge' })).toBe('unknown topic "huge" of app "app-d"');
  });
});

describe('pruning deletions', () => {
  it('a delete prunes deletions older than 90 days and keeps younger ones', async () => {
    await sql`
      insert into topic_deletions (app, topic, deleted_at)
      values ('app-d', 'old', now() - interval '91 days'), ('app-d', 'young', now() - interval '89 days')`.execute(t.db.kysely);
    await createTopic(t.db.kysely, 'app-d', 'short-lived');
    expect(await deleteTopic(t.db.kysely, 'app-d', 'short-lived')).toBe(true);
    const kept = await t.db.kysely.selectFrom('topic_deletions').select('topic').where('app', '=', 'app-d').where('topic', 'in', ['old', 'young', 'short-lived']).orderBy('topic').execute();
    expect(kept.map((r) => r.topic)).toEqual(['short-lived', 'young']);
  });
});
