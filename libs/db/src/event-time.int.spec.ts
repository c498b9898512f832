import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { applyTopicMemberships, createTopic } from './topic-store.ts';
import { applyFollowEvents } from './follow-edges.ts';

// A phone whose clock runs ahead stamps its registrations in the future. Among its own events those
// times still order them; against what others report (Apple's 410 timestamp) and against real time
// (segments' last seen), a time later than when the event was applied counts as that time.
let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('event_time');
  await t.db.apps.upsert({ id: 'app-a' });
  await createTopic(t.db.kysely, 'app-a', 'news');
});
afterAll(() => t.drop());

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const fromNow = (ms: number) => new Date(Date.now() + ms).toISOString();
let n = 0;
const nextToken = () => (++n).toString(16).padStart(64, 'a');
const device = (token: string) => t.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirstOrThrow();
const register = (token: string, userId: string, eventAt: string, lastSeenAt?: string) =>
  t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'app-a', platform: 'apns', token, userId, eventAt, ...(lastSeenAt !== undefined && { lastSeenAt }) });
const unregister = (token: string, eventAt: string) => t.db.devices.applyRegistration({ version: 1, kind: 'unregister', app: 'app-a', platform: 'apns', token, eventAt });
const pause = () => new Promise((r) => setTimeout(r, 20));

describe('event times from a clock running ahead', () => {
  it("Apple's 410 after a registration stamped an hour ahead kills the token (its time counts as when it was applied)", async () => {
    const token = nextToken();
    expect(await register(token, 'u', fromNow(HOUR), fromNow(365 * 24 * HOUR))).toBe('applied');
    const row = await device(token);
    expect(row.registered_at?.getTime()).toBeLessThanOrEqual(Date.now());
    expect(row.last_seen_at?.getTime()).toBeLessThanOrEqual(Date.now()); // segments' "last seen" is not pinned a year ahead
    await pause();
    // Apple answers 410 with the time the token stopped being valid: after the registration, before the phone's clock.
    const invalidSince = new Date();
    expect(await t.db.devices.invalidate({ app: 'app-a', platform: 'apns', token, reason: 'Unregistered', invalidSince, observedAt: new Date() })).toBe('invalidated');
    expect((await device(token)).invalidated_at?.toISOString()).toBe(invalidSince.toISOString());
  });

  it("still orders the phone's own events: its earlier register, delivered again after its unregister, stays stale", async () => {
    const token = nextToken();
    const registered = fromNow(HOUR);
    expect(await register(token, 'u', registered)).toBe('applied');
    expect(await unregister(token, fromNow(HOUR + 30 * 60_000))).toBe('applied');
    await pause();
    expect(await register(token, 'u', registered)).toBe('stale');
    expect((await device(token)).invalidation_reason).toBe('unregistered');
    // Its next register, later by its own clock, revives the token at once.
    await pause();
    expect(await register(token, 'u', fromNow(2 * HOUR))).toBe('applied');
    expect((await device(token)).invalidated_at).toBeNull();
  });

  it('an event time in the past is kept as given', async () => {
    const token = nextToken();
    await register(token, 'u', '2025-03-01T10:00:00.000Z');
    expect((await device(token)).registered_at?.toISOString()).toBe('2025-03-01T10:00:00.000Z');
  });
});

describe('an event stamped far ahead does not pin what it set', () => {
  // A phone whose clock runs a day fast registers for user A. User B then logs in on it, reported
  // by a system with a right clock (the API's default stamps the time it received the request).
  it("another user's login, stamped by a right clock after the fast one was applied, takes the device", async () => {
    const token = nextToken();
    expect(await register(token, 'user-a', fromNow(DAY))).toBe('applied');
    await pause();
    expect(await register(token, 'user-b', new Date().toISOString())).toBe('applied');
    expect((await device(token)).user_id).toBe('user-b');
  });

  it('a logout stamped by a right clock is applied, so the user who left gets no more pushes there', async () => {
    const token = nextToken();
    const fast = fromNow(DAY);
    expect(await register(token, 'user-a', fast)).toBe('applied');
    await pause();
    expect(await unregister(token, new Date().toISOString())).toBe('applied');
    expect((await device(token)).invalidation_reason).toBe('unregistered');
    // The phone's register delivered again (a retry) does not bring the user back.
    await pause();
    expect(await register(token, 'user-a', fast)).toBe('stale');
    expect((await device(token)).invalidation_reason).toBe('unregistered');
    // Its later events, by its own clock, still count; and so do a right clock's after them.
    expect(await register(token, 'user-c', fromNow(DAY + HOUR))).toBe('applied');
    await pause();
    expect(await register(token, 'user-d', new Date().toISOString())).toBe('applied');
    expect((await device(token)).user_id).toBe('user-d');
  });

  it("a fast clock's register delivered again (its first ack lost) does not make a logout stamped between the two deliveries stale", async () => {
    const token = nextToken();
    const fast = fromNow(DAY);
    expect(await register(token, 'user-a', fast)).toBe('applied');
    await pause();
    const logout = new Date().toISOString();
    await pause();
    const registeredAt = (await device(token)).registered_at;
    // The same message again: applied again, its first application's times kept.
    expect(await register(token, 'user-a', fast)).toBe('applied');
    expect((await device(token)).registered_at).toEqual(registeredAt);
    expect(await unregister(token, logout)).toBe('applied');
    expect((await device(token)).invalidation_reason).toBe('unregistered');
  });

  it("a fast clock's register delivered again after a provider's 410 does not bring the token back", async () => {
    const token = nextToken();
    const fast = fromNow(DAY);
    expect(await register(token, 'user-a', fast)).toBe('applied');
    await pause();
    // Apple: invalid since a moment after the register was applied (the app uninstalled).
    expect(await t.db.devices.invalidate({ app: 'app-a', platform: 'apns', token, reason: 'Unregistered', invalidSince: new Date(), observedAt: new Date() })).toBe('invalidated');
    await pause();
    expect(await register(token, 'user-a', fast)).toBe('stale');
    expect((await device(token)).invalidation_reason).toBe('Unregistered');
  });

  it("a fast clock's unregister delivered again does not make a register stamped between the two deliveries stale", async () => {
    const token = nextToken();
    expect(await register(token, 'user-a', new Date().toISOString())).toBe('applied');
    const fast = fromNow(DAY);
    expect(await unregister(token, fast)).toBe('applied');
    await pause();
    const login = new Date().toISOString();
    await pause();
    expect(await unregister(token, fast)).toBe('applied');
    expect(await register(token, 'user-b', login)).toBe('applied');
    expect(await device(token)).toMatchObject({ user_id: 'user-b', invalidated_at: null });
  });

  it("right clocks' events go on ordering by their own times after one overruled the fast clock", async () => {
    // A logout and then another user's login, both stamped by the API before the logout was applied.
    const token = nextToken();
    expect(await register(token, 'user-a', fromNow(DAY))).toBe('applied');
    await pause();
    const logout = new Date().toISOString();
    await pause();
    const login = new Date().toISOString();
    expect(await unregister(token, logout)).toBe('applied');
    expect(await register(token, 'user-b', login)).toBe('applied');
    expect((await device(token)).user_id).toBe('user-b');
    expect((await device(token)).invalidated_at).toBeNull();
  });

  it('an event stamped before the fast one was applied stays stale: which came first cannot be told', async () => {
    const token = nextToken();
    const before = fromNow(-1_000);
    expect(await register(token, 'user-a', fromNow(DAY))).toBe('applied');
    expect(await register(token, 'user-b', before)).toBe('stale');
    expect((await device(token)).user_id).toBe('user-a');
  });

  it('within the clock-skew allowance the times are taken as given', async () => {
    const token = nextToken();
    expect(await register(token, 'user-a', fromNow(2 * 60_000))).toBe('applied');
    await pause();
    expect(await register(token, 'user-b', new Date().toISOString())).toBe('stale');
    expect((await device(token)).user_id).toBe('user-a');
  });

  it('an unsubscribe and an unfollow stamped by a right clock beat a subscribe and a follow stamped a day ahead', async () => {
    const fast = fromNow(DAY);
    const member = (subscribed: boolean, eventAt: string) => ({ app: 'app-a', topic: 'news', member: { userId: 'fast-phone-user' }, subscribed, eventAt });
    expect(await applyTopicMemberships(t.db.kysely, [member(true, fast)])).toEqual(['applied']);
    const follow = (following: boolean, eventAt: string) => ({ app: 'app-a', followee: 'star', follower: 'fast-phone-user', following, eventAt });
    expect(await applyFollowEvents(t.db.kysely, [follow(true, fast)])).toEqual(['applied']);
    await pause();
    // The fast clock's own earlier event, delivered again, is still ordered by that clock.
    expect(await applyTopicMemberships(t.db.kysely, [member(false, fromNow(DAY - HOUR))])).toEqual(['stale']);
    expect(await applyFollowEvents(t.db.kysely, [follow(false, fromNow(DAY - HOUR))])).toEqual(['stale']);
    expect(await applyTopicMemberships(t.db.kysely, [member(false, new Date().toISOString())])).toEqual(['applied']);
    expect(await applyFollowEvents(t.db.kysely, [follow(false, new Date().toISOString())])).toEqual(['applied']);
    // The fast clock's subscribe and follow delivered again stay stale.
    await pause();
    expect(await applyTopicMemberships(t.db.kysely, [member(true, fast)])).toEqual(['stale']);
    expect(await applyFollowEvents(t.db.kysely, [follow(true, fast)])).toEqual(['stale']);
    const row = await t.db.kysely.selectFrom('topic_members').select('subscribed').where('member_id', '=', 'fast-phone-user').executeTakeFirstOrThrow();
    expect(row.subscribed).toBe(false);
    const edge = await t.db.kysely.selectFrom('follows').select('following').where('follower', '=', 'fast-phone-user').executeTakeFirstOrThrow();
    expect(edge.following).toBe(false);
  });

  it("a fast clock's subscribe and follow delivered again do not make an unsubscribe and an unfollow stamped between the two deliveries stale", async () => {
    const fast = fromNow(DAY);
    const member = (subscribed: boolean, eventAt: string) => ({ app: 'app-a', topic: 'news', member: { userId: 'redelivered-user' }, subscribed, eventAt });
    const follow = (following: boolean, eventAt: string) => ({ app: 'app-a', followee: 'star', follower: 'redelivered-user', following, eventAt });
    expect(await applyTopicMemberships(t.db.kysely, [member(true, fast)])).toEqual(['applied']);
    expect(await applyFollowEvents(t.db.kysely, [follow(true, fast)])).toEqual(['applied']);
    await pause();
    const between = new Date().toISOString();
    await pause();
    expect(await applyTopicMemberships(t.db.kysely, [member(true, fast)])).toEqual(['applied']);
    expect(await applyFollowEvents(t.db.kysely, [follow(true, fast)])).toEqual(['applied']);
    expect(await applyTopicMemberships(t.db.kysely, [member(false, between)])).toEqual(['applied']);
    expect(await applyFollowEvents(t.db.kysely, [follow(false, between)])).toEqual(['applied']);
  });
});
