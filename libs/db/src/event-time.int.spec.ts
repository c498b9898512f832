import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyFollowEvents } from './follow-edges.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { applyTopicMemberships, createTopic } from './topic-store.ts';

// A phone whose clock runs a day ahead reports its events a day in the future. Last event wins,
// so before they were clamped to the time they were applied, such an event beat every real one for a day.
let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('event_time');
  await t.db.apps.upsert({ id: 'app-a' });
  await createTopic(t.db.kysely, 'app-a', 'news');
});
afterAll(() => t.drop());

const DAY = 86_400_000;
const fromNow = (ms: number) => new Date(Date.now() + ms).toISOString();
const token = 'ab'.repeat(32);
const device = () => t.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirstOrThrow();
const register = (userId: string, eventAt: string, lastSeenAt?: string) =>
  t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'app-a', platform: 'apns', token, userId, eventAt, ...(lastSeenAt !== undefined && { lastSeenAt }) });

describe('an event time from a clock running ahead counts as when it was applied', () => {
  it("a device: a hand-over to another user and Apple's report that the token died still take", async () => {
    const before = Date.now();
    expect(await register('phone-owner', fromNow(DAY), fromNow(365 * DAY))).toBe('applied');
    const first = await device();
    expect(first.last_event_at.getTime()).toBeLessThanOrEqual(Date.now());
    expect(first.last_event_at.getTime()).toBeGreaterThanOrEqual(before - 1_000);
    expect(first.last_seen_at?.getTime()).toBeLessThanOrEqual(Date.now()); // segments' "last seen" cannot be pinned a year ahead

    // The phone goes to a new owner, whose registration is true to the second.
    await new Promise((r) => setTimeout(r, 20));
    expect(await register('new-owner', new Date().toISOString())).toBe('applied');
    expect(await device()).toMatchObject({ user_id: 'new-owner' });

    // Apple answers 410 with the time the token stopped being valid, after that registration.
    await new Promise((r) => setTimeout(r, 20));
    const invalidSince = new Date();
    expect(await t.db.devices.invalidate({ app: 'app-a', platform: 'apns', token, reason: 'Unregistered', invalidSince, observedAt: new Date() })).toBe('invalidated');
    expect((await device()).invalidated_at?.toISOString()).toBe(invalidSince.toISOString());
  });

  it('a topic membership and a follow: the unsubscribe and the unfollow that come next take', async () => {
    const member = { app: 'app-a', topic: 'news', member: { userId: 'reader' } };
    expect(await applyTopicMemberships(t.db.kysely, [{ ...member, subscribed: true, eventAt: fromNow(DAY) }])).toEqual(['applied']);
    await new Promise((r) => setTimeout(r, 20));
    expect(await applyTopicMemberships(t.db.kysely, [{ ...member, subscribed: false, eventAt: new Date().toISOString() }])).toEqual(['applied']);
    const membership = await t.db.kysely.selectFrom('topic_members').select('subscribed').where('member_id', '=', 'reader').executeTakeFirstOrThrow();
    expect(membership.subscribed).toBe(false);

    const edge = { app: 'app-a', follower: 'fan', followee: 'star' };
    expect(await applyFollowEvents(t.db.kysely, [{ ...edge, following: true, eventAt: fromNow(DAY) }])).toEqual(['applied']);
    await new Promise((r) => setTimeout(r, 20));
    expect(await applyFollowEvents(t.db.kysely, [{ ...edge, following: false, eventAt: new Date().toISOString() }])).toEqual(['applied']);
    const follow = await t.db.kysely.selectFrom('follows').select('following').where('follower', '=', 'fan').executeTakeFirstOrThrow();
    expect(follow.following).toBe(false);
  });

  it('an event time in the past is kept as given', async () => {
    const other = { app: 'app-a', follower: 'fan-2', followee: 'star' };
    await applyFollowEvents(t.db.kysely, [{ ...other, following: true, eventAt: '2025-03-01T10:00:00.000Z' }]);
    const row = await t.db.kysely.selectFrom('follows').select('event_at').where('follower', '=', 'fan-2').executeTakeFirstOrThrow();
    expect(row.event_at.toISOString()).toBe('2025-03-01T10:00:00.000Z');
  });
});
