import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { applyTopicMemberships, createTopic, createTopicWithin, findTopic } from './topic-store.ts';
import { deleteTopic, removeDeletedMembers } from './topic-deletion.ts';

// The API's create of a topic deleted moments ago: before, it removed every leftover member row of
// the deletion first, waiting for rows the background removal held, with no bound: a topic of
// millions held POST /v1/topics for minutes, past its client's timeout, and its retries piled up.

let t: SpecDatabase;
const APP = 'app-c';
beforeAll(async () => {
  t = await createSpecDatabase('topic_create');
  await t.db.apps.upsert({ id: APP });
});
afterAll(() => t?.drop());

const memberRows = async (topic: string) =>
  Number((await sql<{ n: string }>`select count(*) as n from topic_members where app = ${APP} and topic = ${topic}`.execute(t.db.kysely)).rows[0]?.n);
/** A topic of `n` user members u1..un, deleted: its member rows left, as just after its DELETE was answered. */
async function deletedWithMembers(topic: string, n: number): Promise<void> {
  await createTopic(t.db.kysely, APP, topic);
  await sql`
    insert into topic_members (app, topic, member_kind, member_id, subscribed, event_at)
    select ${APP}, ${topic}, 'user', 'u' || g, true, now() - interval '1 day' from generate_series(1, ${n}) g`.execute(t.db.kysely);
  expect(await deleteTopic(t.db.kysely, APP, topic)).toBe(true);
}
/** `run` while another transaction holds member u1's row of `topic` (a removal's statement under way), released after `holdMs` or at the end. */
async function whileHeld<T>(topic: string, run: () => Promise<T>, holdMs?: number): Promise<T> {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let held!: () => void;
  const holding = new Promise<void>((r) => {
    held = r;
  });
  const holder = t.db.kysely.transaction().execute(async (tx) => {
    await sql`select 1 from topic_members where app = ${APP} and topic = ${topic} and member_id = 'u1' for update`.execute(tx);
    held();
    await released;
  });
  await holding;
  const timer = holdMs === undefined ? undefined : setTimeout(release, holdMs);
  try {
    return await run();
  } finally {
    clearTimeout(timer);
    release();
    await holder;
  }
}
/** `p`, or 'no answer' after `ms`. */
const within = <T>(p: Promise<T>, ms: number): Promise<T | 'no answer'> =>
  Promise.race([p, new Promise<'no answer'>((r) => setTimeout(() => r('no answer'), ms).unref())]);

describe('createTopicWithin: a topic created again while rows of its deletion remain', () => {
  it('removes them for its time only, then creates nothing and says some remain; once they are gone it creates the topic without them', async () => {
    await deletedWithMembers('crowd', 30_000);
    const started = performance.now();
    expect(await createTopicWithin(t.db.kysely, APP, 'crowd', { withinMs: 50, batchSize: 200 })).toEqual({ kind: 'members-remain' });
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(await findTopic(t.db.kysely, APP, 'crowd')).toBeUndefined();
    const left = await memberRows('crowd');
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(30_000);
    expect(await removeDeletedMembers(t.db.kysely, APP, 'crowd')).toBe(left);
    const made = await createTopicWithin(t.db.kysely, APP, 'crowd');
    expect(made).toMatchObject({ kind: 'created', topic: { subscribers: 0 } });
    expect(await applyTopicMemberships(t.db.kysely, [{ app: APP, topic: 'crowd', member: { userId: 'newbie' }, subscribed: true, eventAt: new Date(Date.now() + 1_000).toISOString() }])).toEqual(['applied']);
    expect((await findTopic(t.db.kysely, APP, 'crowd'))?.subscribers).toBe(1);
  });

  it('skips a row another transaction holds instead of waiting for it: says some remain within its time, the others removed', async () => {
    await deletedWithMembers('held', 300);
    const started = performance.now();
    const made = await whileHeld('held', () => within(createTopicWithin(t.db.kysely, APP, 'held', { withinMs: 300 }), 5_000));
    expect(made).toEqual({ kind: 'members-remain' });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(await memberRows('held')).toBe(1);
    expect(await findTopic(t.db.kysely, APP, 'held')).toBeUndefined();
  });

  it('creates the topic once a statement holding its last rows commits within its time (a small topic deleted moments ago)', async () => {
    await deletedWithMembers('small', 50);
    const made = await whileHeld('small', () => createTopicWithin(t.db.kysely, APP, 'small', { withinMs: 2_000 }), 300);
    expect(made).toMatchObject({ kind: 'created', topic: { subscribers: 0 } });
    expect(await memberRows('small')).toBe(0);
  });

  it('finds a topic that exists (idempotent)', async () => {
    await createTopic(t.db.kysely, APP, 'there');
    expect(await createTopicWithin(t.db.kysely, APP, 'there')).toMatchObject({ kind: 'existed', topic: { name: 'there' } });
  });
});
