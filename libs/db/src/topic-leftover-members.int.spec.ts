import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Registration } from '@herald/contracts';
import { createSpecDatabase, specDevicePush, type SpecDatabase } from './spec-database.ts';
import { audienceSize, readAudienceChunk, type AudienceSpec } from './audience-stream.ts';
import { applyTopicMemberships, createTopic, findTopic, type TopicMemberEvent } from './topic-store.ts';
import type { SkippedCounts } from './scheduled-push-repository.ts';

// A deleted topic's row goes first and its member rows after it, a batch at a time
// (topic-deletion.ts); a deletion cut short (the process stopped) leaves them until it is deleted
// again or created again. Such rows are simulated here by deleting the topic's row alone, as a
// deletion cut short before its first batch leaves it. Whoever decides who gets a push must take
// them for no membership, as when the topic's cascade removed them with its row.

let t: SpecDatabase;
const APP = 'app-left';
const NOW = new Date();

const reg = (userId: string, platform: 'apns' | 'fcm', token: string): Registration => ({ version: 1, kind: 'register', app: APP, platform, token, userId, eventAt: new Date(NOW.getTime() - 60_000).toISOString() });
const member = (topic: string, m: TopicMemberEvent['member']): TopicMemberEvent => ({ app: APP, topic, member: m, subscribed: true, eventAt: new Date(NOW.getTime() - 60_000).toISOString() });
/** The topic's row deleted by itself: its member rows left, as by a deletion cut short. */
const cutShort = (topic: string) => sql`delete from topics where app = ${APP} and name = ${topic}`.execute(t.db.kysely);
const memberRows = async (topic: string) =>
  Number((await sql<{ n: string }>`select count(*) as n from topic_members where app = ${APP} and topic = ${topic}`.execute(t.db.kysely)).rows[0]?.n);

beforeAll(async () => {
  t = await createSpecDatabase('topic_leftovers');
  await t.db.apps.upsert({ id: APP });
  await t.db.devices.applyRegistrations([reg('u1', 'apns', 'a1'.repeat(32)), reg('u2', 'fcm', 'tok-u2'), reg('u3', 'fcm', 'tok-u3'), reg('u4', 'fcm', 'tok-u4')]);
});
afterAll(() => t?.drop());

describe('a fan-out of a topic whose row is gone and whose member rows remain', () => {
  const topic = (name: string): AudienceSpec => ({ kind: 'topic', topic: name });
  const chunk = (name: string, after: string | null, limit = 10) => readAudienceChunk(t.db, { app: APP, audience: topic(name), category: 'news', after, limit, now: NOW });

  it('reads none of its user members, from the start or from the cursor of a chunk read before the deletion', async () => {
    await createTopic(t.db.kysely, APP, 'users');
    await applyTopicMemberships(t.db.kysely, ['u1', 'u2', 'u3'].map((u) => member('users', { userId: u })));
    const first = await chunk('users', null, 1);
    expect(first.devices.map((d) => d.userId)).toEqual(['u1']);
    await cutShort('users');
    expect(await memberRows('users')).toBe(3);
    // Before, the cascade removed them in the deletion's commit: the running fan-out's next chunk found none.
    expect(await chunk('users', first.next)).toEqual({ devices: [], usersWithoutDevice: 0, next: null });
    expect(await chunk('users', null)).toEqual({ devices: [], usersWithoutDevice: 0, next: null });
  });

  it('reads none of its device members', async () => {
    await createTopic(t.db.kysely, APP, 'gadgets');
    await applyTopicMemberships(t.db.kysely, [member('gadgets', { platform: 'fcm', token: 'tok-u4' }), member('gadgets', { platform: 'fcm', token: 'tok-u3' })]);
    expect((await chunk('gadgets', null)).devices.map((d) => d.token)).toEqual(['tok-u3', 'tok-u4']);
    await cutShort('gadgets');
    expect(await chunk('gadgets', null)).toEqual({ devices: [], usersWithoutDevice: 0, next: null });
  });

  it('counts none of them: the topic is unknown to GET and its audience size is 0', async () => {
    await createTopic(t.db.kysely, APP, 'counted');
    await applyTopicMemberships(t.db.kysely, [member('counted', { userId: 'u1' }), member('counted', { platform: 'fcm', token: 'tok-u2' })]);
    expect((await findTopic(t.db.kysely, APP, 'counted'))?.subscribers).toBe(2);
    await cutShort('counted');
    expect(await findTopic(t.db.kysely, APP, 'counted')).toBeUndefined();
    expect(await audienceSize(t.db, { app: APP, audience: topic('counted') })).toEqual({ size: 0, exact: false });
  });
});

describe('a stored push of a topic job falling due once the topic is deleted and its member rows remain', () => {
  it('is left-audience, user member or device member; one of a topic still there is released', async () => {
    const db = t.db.kysely;
    for (const name of ['promo', 'kept']) await createTopic(db, APP, name);
    await applyTopicMemberships(db, [member('promo', { userId: 'u1' }), member('promo', { platform: 'fcm', token: 'tok-u2' }), member('kept', { userId: 'u1' })]);
    const fanout = (jobId: string, name: string) =>
      sql`insert into fanouts (job_id, app, audience, job, accepted_at) values (${jobId}, ${APP}, ${JSON.stringify({ topic: name })}::jsonb, ${JSON.stringify({ id: jobId })}::jsonb, ${NOW.toISOString()}::timestamptz)`.execute(db);
    await fanout('promo-job', 'promo');
    await fanout('kept-job', 'kept');
    const due = new Date(Date.now() - 1_000);
    const toUser = specDevicePush('promo-job', '1', { app: APP, platform: 'fcm', token: 'tok-u1', userId: 'u1' });
    const toDevice = specDevicePush('promo-job', '2', { app: APP, platform: 'fcm', token: 'tok-u2', userId: 'u2', toDevice: true });
    const kept = specDevicePush('kept-job', '1', { app: APP, platform: 'fcm', token: 'tok-u1', userId: 'u1' });
    await t.db.scheduled.schedule([toUser, toDevice, kept].map((push) => ({ dueAt: due, push })));
    await cutShort('promo');
    expect(await memberRows('promo')).toBe(2);
    const released: string[] = [];
    let skipped: SkippedCounts = {};
    expect(await t.db.scheduled.withDueBatch('fcm', new Date(), 10, async (rows) => void released.push(...rows.map((r) => r.pushId)), (s) => (skipped = s))).toBe(3);
    expect(released).toEqual([kept.pushId]);
    expect(skipped).toEqual({ 'left-audience': 2 });
    const outcomes = await db.selectFrom('push_outcomes').select(['push_id', 'code']).where('job_id', '=', 'promo-job').orderBy('push_id').execute();
    expect(outcomes).toEqual([toUser.pushId, toDevice.pushId].sort().map((push_id) => ({ push_id, code: 'left-audience' })));
  });
});
