import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { applyTopicMemberships, createTopic, findTopic, type TopicMemberEvent } from './topic-store.ts';
import { createLogger } from '@herald/logging';
import { deleteTopic, removeDeletedMembers } from './topic-deletion.ts';
import { startTopicMemberRemovals, sweepDeletedTopicMembers, type RemoveTopicMembers } from './topic-member-sweep.ts';
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

  it('deleting again answers that there is no such topic; the removal finishes what the deletion cut short left', async () => {
    await createTopic(t.db.kysely, 'app-d', 'cut-again');
    expect(await subscribe('cut-again', 'gina', at(-MINUTE))).toEqual(['applied']);
    await sql`delete from topics where app = 'app-d' and name = 'cut-again'`.execute(t.db.kysely);
    expect(await deleteTopic(t.db.kysely, 'app-d', 'cut-again')).toBe(false);
    expect(await removeDeletedMembers(t.db.kysely, 'app-d', 'cut-again')).toBe(1);
    expect(await memberRows('cut-again')).toBe(0);
  });
});

const MEMBERS = 25_000;
/** `n` user members u1..un of the topic, straight into the table. */
const fill = (topic: string, n = MEMBERS) =>
  sql`
    insert into topic_members (app, topic, member_kind, member_id, subscribed, event_at)
    select 'app-d', ${topic}, 'user', 'u' || g, true, now() - interval '1 day' from generate_series(1, ${n}) g`.execute(t.db.kysely);
const logger = createLogger({ service: 'spec', level: 'fatal', format: 'json' });

describe('deleting a topic of many members', () => {
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

  // Before, the delete removed every member row before it answered: minutes for millions, past any HTTP client's timeout.
  it(`answers once the topic is gone, its ${MEMBERS} member rows all still there; a job to it is refused; they go after it, ${BATCH} a statement`, async () => {
    await createTopic(t.db.kysely, 'app-d', 'huge');
    await fill('huge');
    expect((await findTopic(t.db.kysely, 'app-d', 'huge'))?.subscribers).toBe(MEMBERS);
    expect(await deleteTopic(t.db.kysely, 'app-d', 'huge')).toBe(true);
    expect(await memberRows('huge')).toBe(MEMBERS);
    expect(await audienceProblem(t.db.kysely, 'app-d', { topic: 'huge' })).toBe('unknown topic "huge" of app "app-d"');
    expect(await subscribe('huge', 'late', at(0))).toEqual(['unknown-topic']);
    const { result, statements } = await countingDeletes(() => removeDeletedMembers(t.db.kysely, 'app-d', 'huge', { batchSize: BATCH }));
    expect(result).toBe(MEMBERS);
    expect(statements.filter((n) => n > 0)).toEqual([BATCH, BATCH, MEMBERS - 2 * BATCH]);
    expect(await memberRows('huge')).toBe(0);
  });
});

describe("a deleted topic's members removed in the background, and swept", () => {
  const BATCH = 1_000;

  /** A background removal of BATCH rows a statement that pauses after its first batch until `resume()`. */
  function pausingAfterFirstBatch() {
    let firstDone!: () => void;
    let resume!: () => void;
    const first = new Promise<void>((r) => {
      firstDone = () => r();
    });
    const resumed = new Promise<void>((r) => {
      resume = () => r();
    });
    let batches = 0;
    let running: Promise<number> | undefined;
    const remove: RemoveTopicMembers = (app, name, signal) =>
      (running = removeDeletedMembers(t.db.kysely, app, name, {
        batchSize: BATCH,
        signal,
        skipLocked: true,
        onBatch: async () => {
          if (++batches > 1) return;
          firstDone();
          await resumed;
        },
      }));
    return { remove, first, resume, finished: () => running, batches: () => batches };
  }

  it('a stop ends the removal after its statement under way, leaving the rest; the sweep removes them', async () => {
    await createTopic(t.db.kysely, 'app-d', 'stopped');
    await fill('stopped', 2_500);
    expect(await deleteTopic(t.db.kysely, 'app-d', 'stopped')).toBe(true);
    const paused = pausingAfterFirstBatch();
    const removals = startTopicMemberRemovals(paused.remove, logger);
    removals.add('app-d', 'stopped');
    await paused.first;
    const stopped = removals.stop();
    paused.resume();
    await stopped;
    expect(await paused.finished()).toBe(BATCH);
    expect(await memberRows('stopped')).toBe(1_500);
    expect(await sweepDeletedTopicMembers(t.db.kysely, BATCH)).toBe(1_500);
    expect(await memberRows('stopped')).toBe(0);
  });

  it('a topic created again while its old members are being removed keeps its new members', async () => {
    await createTopic(t.db.kysely, 'app-d', 'reborn');
    await fill('reborn', 2_500);
    expect(await deleteTopic(t.db.kysely, 'app-d', 'reborn')).toBe(true);
    const paused = pausingAfterFirstBatch();
    const removals = startTopicMemberRemovals(paused.remove, logger);
    removals.add('app-d', 'reborn');
    await paused.first;
    // Created again between two of the removal's statements: it removes the old rows left itself.
    expect((await createTopic(t.db.kysely, 'app-d', 'reborn')).topic.subscribers).toBe(0);
    const after = new Date(Date.now() + 1_000).toISOString();
    expect(await applyTopicMemberships(t.db.kysely, ['u2', 'newbie'].map((userId) => ({ app: 'app-d', topic: 'reborn', member: { userId }, subscribed: true, eventAt: after })))).toEqual(['applied', 'applied']);
    paused.resume();
    // The removal's next statement finds the topic there and deletes nothing; nor does the sweep.
    expect(await paused.finished()).toBe(BATCH);
    expect(paused.batches()).toBe(1);
    expect(await sweepDeletedTopicMembers(t.db.kysely, BATCH)).toBe(0);
    await removals.stop();
    expect(await members('reborn')).toEqual(['newbie', 'u2']);
    expect((await findTopic(t.db.kysely, 'app-d', 'reborn'))?.subscribers).toBe(2);
  });

  it("the sweep removes every deleted topic's leftovers, none of a topic there, skipping rows another holds without waiting", async () => {
    for (const name of ['left-a', 'left-b', 'alive']) {
      await createTopic(t.db.kysely, 'app-d', name);
      await fill(name, 1_200);
    }
    for (const name of ['left-a', 'left-b']) expect(await deleteTopic(t.db.kysely, 'app-d', name)).toBe(true);
    await t.db.kysely.transaction().execute(async (tx) => {
      await sql`select 1 from topic_members where app = 'app-d' and topic = 'left-b' and member_id = 'u1' for update`.execute(tx);
      // Each statement's rows told as it commits (the registrar counts them so: a sweep failing part-way still counts those).
      const told: number[] = [];
      expect(await sweepDeletedTopicMembers(t.db.kysely, BATCH, undefined, (n) => void told.push(n))).toBe(2_400 - 1);
      expect(told).toEqual([1_000, 200, 1_000, 199]);
    });
    expect([await memberRows('left-a'), await memberRows('left-b'), await memberRows('alive')]).toEqual([0, 1, 1_200]);
    expect(await sweepDeletedTopicMembers(t.db.kysely, BATCH)).toBe(1);
    expect(await memberRows('left-b')).toBe(0);
    expect(await sweepDeletedTopicMembers(t.db.kysely, BATCH)).toBe(0);
  });
});

describe('pruning deletions', () => {
  it('keeps a deletion older than 90 days while its member rows remain, so the sweep finds them; prunes it after', async () => {
    await sql`insert into topic_deletions (app, topic, deleted_at) values ('app-d', 'old-left', now() - interval '91 days')`.execute(t.db.kysely);
    await fill('old-left', 3);
    const kept = async () => (await t.db.kysely.selectFrom('topic_deletions').select('topic').where('app', '=', 'app-d').where('topic', '=', 'old-left').execute()).length;
    await createTopic(t.db.kysely, 'app-d', 'prompt-1');
    expect(await deleteTopic(t.db.kysely, 'app-d', 'prompt-1')).toBe(true);
    expect(await kept()).toBe(1);
    expect(await sweepDeletedTopicMembers(t.db.kysely)).toBeGreaterThanOrEqual(3);
    expect(await memberRows('old-left')).toBe(0);
    await createTopic(t.db.kysely, 'app-d', 'prompt-2');
    expect(await deleteTopic(t.db.kysely, 'app-d', 'prompt-2')).toBe(true);
    expect(await kept()).toBe(0);
  });


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
