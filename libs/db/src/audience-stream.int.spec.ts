import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { parseSegment, type Registration, type SegmentFilter } from '@herald/contracts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { audienceSize, readAudienceChunk, type AudienceSpec } from './audience-stream.ts';
import { applyTopicMemberships, createTopic } from './topic-store.ts';
import { applyFollowEvents } from './follow-edges.ts';
import { waitFor } from '@herald/testing';
import type { AudienceDevice } from './device-targets.ts';

const NOW = new Date('2025-06-01T12:00:00Z');
const N = 2_500;
const daysAgo = (d: number) => new Date(NOW.getTime() - d * 86_400_000).toISOString();
const LOCALES = ['de-DE', 'de-AT', 'en-GB', 'fr-FR', 'en-US'];
const VERSIONS = ['4.9.9', '5', '5.0.1', '5.10', '5.9.3-beta1'];

/** Device i of app-a: user-i, apns when i is even; attributes cycle so segments split them. */
const reg = (i: number, over: Partial<Extract<Registration, { kind: 'register' }>> = {}): Registration => ({
  version: 1,
  kind: 'register',
  app: 'app-a',
  platform: i % 2 === 0 ? 'apns' : 'fcm',
  token: `tok-${i}`,
  userId: `user-${i}`,
  locale: LOCALES[i % 5],
  timezone: i % 3 === 0 ? 'Europe/Berlin' : 'UTC',
  appVersion: VERSIONS[i % 5],
  lastSeenAt: daysAgo(i % 60),
  eventAt: '2025-01-01T00:00:00Z',
  ...over,
});

let t: SpecDatabase;

const segment = (text: string): SegmentFilter => {
  const r = parseSegment(text);
  if (!r.ok) throw new Error(r.message);
  return r.filter;
};

/** Reads the whole audience chunk by chunk; fails on a chunk larger than the limit. */
async function walk(audience: AudienceSpec, limit: number, extra: { category?: string; objectId?: string } = {}) {
  const devices: AudienceDevice[] = [];
  let after: string | null = null;
  let chunks = 0;
  let usersWithoutDevice = 0;
  do {
    const chunk = await readAudienceChunk(t.db, { app: 'app-a', audience, category: extra.category ?? 'news', ...(extra.objectId !== undefined && { objectId: extra.objectId }), after, limit, now: NOW });
    expect(chunk.devices.length).toBeLessThanOrEqual(limit);
    devices.push(...chunk.devices);
    usersWithoutDevice += chunk.usersWithoutDevice;
    after = chunk.next;
    chunks += 1;
  } while (after !== null && chunks < 1000);
  return { devices, chunks, usersWithoutDevice, ids: devices.map((d) => d.deviceId) };
}

beforeAll(async () => {
  t = await createSpecDatabase('audience');
  await t.db.apps.upsert({ id: 'app-a' });
  await t.db.apps.upsert({ id: 'app-b' });
  const all = Array.from({ length: N }, (_, i) => reg(i));
  await t.db.devices.applyRegistrations(all);
  // Another app's devices and dead devices are never in app-a's audiences.
  await t.db.devices.applyRegistrations(Array.from({ length: 50 }, (_, i) => reg(i, { app: 'app-b' })));
  await t.db.devices.applyRegistrations(
    Array.from({ length: 25 }, (_, i) => ({ version: 1, kind: 'unregister', app: 'app-a', platform: 'fcm', token: `tok-${i * 100 + 1}`, eventAt: '2025-02-01T00:00:00Z' }) as const),
  );
});

afterAll(async () => t?.drop());

describe('broadcast', () => {
  it('walks every active device of the app exactly once in chunks of 500', async () => {
    const { ids, chunks, devices } = await walk({ kind: 'broadcast' }, 500);
    expect(ids).toHaveLength(N - 25);
    // Addressed to each device, not to its user: sent even if the device goes to another user meanwhile.
    expect(devices.every((d) => d.toDevice === true)).toBe(true);
    expect(new Set(ids).size).toBe(N - 25);
    expect(chunks).toBeGreaterThanOrEqual(5);
    expect(ids).toEqual([...ids].sort((a, b) => Number(a) - Number(b)));
    expect(await audienceSize(t.db, { app: 'app-a', audience: { kind: 'broadcast' } })).toEqual({ size: N - 25, exact: true });
  });

  it('reports opt-outs and mutes of the category and object in skipped', async () => {
    await t.db.preferences.addOptOut('user-2', 'promo', 'app-a');
    await t.db.preferences.setMute('user-4', 'thread:9', null, 'app-a');
    const { devices } = await walk({ kind: 'broadcast', segment: segment('platform = "apns" and timezone = "UTC"') }, 300, { category: 'promo', objectId: 'thread:9' });
    const byUser = new Map(devices.map((d) => [d.userId, d.skipped]));
    expect(byUser.get('user-2')).toBe('opted-out');
    expect(byUser.get('user-4')).toBe('muted');
    expect(byUser.get('user-8')).toBeNull();
  });
});

describe('segments', () => {
  const active = Array.from({ length: N }, (_, i) => i).filter((i) => !(i % 100 === 1 && i / 100 < 25));
  const expectSegment = async (text: string, predicate: (i: number) => boolean) => {
    const { devices } = await walk({ kind: 'broadcast', segment: segment(text) }, 700);
    expect(devices.map((d) => d.userId).sort()).toEqual(active.filter(predicate).map((i) => `user-${i}`).sort());
    const size = await audienceSize(t.db, { app: 'app-a', audience: { kind: 'broadcast', segment: segment(text) }, now: NOW });
    expect(size.size).toBe(active.filter(predicate).length);
  };

  it('compares appVersion by its numbers (5.10 > 5.9, 5 = 5.0.0, a suffix ignored)', async () => {
    await expectSegment('appVersion >= "5.9"', (i) => [3, 4].includes(i % 5));
    await expectSegment('appVersion = "5.0.0"', (i) => i % 5 === 1);
    await expectSegment('appVersion < 5', (i) => i % 5 === 0);
  });

  it('combines platform, language prefix, locale lists, timezone, lastSeen, not and or', async () => {
    await expectSegment('platform = "apns" and language = "de"', (i) => i % 2 === 0 && i % 5 < 2);
    await expectSegment('locale in ("en-GB", "fr-FR") or timezone = "Europe/Berlin"', (i) => [2, 3].includes(i % 5) || i % 3 === 0);
    await expectSegment('lastSeen within 10d and not (platform = "fcm")', (i) => i % 60 <= 10 && i % 2 === 0);
    await expectSegment('lastSeen before 50d', (i) => i % 60 > 50);
    await expectSegment('not (language = "en") and locale != "de-AT"', (i) => [0, 3].includes(i % 5));
    // Written in another case than the devices registered them: the same devices.
    await expectSegment('locale in ("en-gb", "FR-fr") or timezone = "europe/berlin"', (i) => [2, 3].includes(i % 5) || i % 3 === 0);
    await expectSegment('not (language = "EN") and locale != "de-at"', (i) => [0, 3].includes(i % 5));
  });

  it("judges lastSeen from the fan-out's start in every chunk: a chunk read two days later reads the same devices", async () => {
    const audience: AudienceSpec = { kind: 'broadcast', segment: segment('lastSeen within 10d') };
    const first = await readAudienceChunk(t.db, { app: 'app-a', audience, category: 'news', after: null, limit: 5_000, now: NOW, startedAt: NOW });
    const later = await readAudienceChunk(t.db, { app: 'app-a', audience, category: 'news', after: null, limit: 5_000, now: new Date(NOW.getTime() + 2 * 86_400_000), startedAt: NOW });
    expect(first.devices.length).toBe(active.filter((i) => i % 60 <= 10).length);
    expect(later.devices.map((d) => d.deviceId)).toEqual(first.devices.map((d) => d.deviceId));
  });
});

describe('topics', () => {
  beforeAll(async () => {
    await createTopic(t.db.kysely, 'app-a', 'news');
    const users = Array.from({ length: N }, (_, i) => i).filter((i) => i % 2 === 0);
    await applyTopicMemberships(
      t.db.kysely,
      users.map((i) => ({ app: 'app-a', topic: 'news', member: { userId: `user-${i}` }, subscribed: true, eventAt: '2025-03-01T00:00:00Z' })),
    );
    // Single devices: an odd user's device, an even user's (already in through its user), and a token registered later.
    await applyTopicMemberships(t.db.kysely, [
      { app: 'app-a', topic: 'news', member: { platform: 'fcm', token: 'tok-3' }, subscribed: true, eventAt: '2025-03-01T00:00:00Z' },
      { app: 'app-a', topic: 'news', member: { platform: 'apns', token: 'tok-4' }, subscribed: true, eventAt: '2025-03-01T00:00:00Z' },
      { app: 'app-a', topic: 'news', member: { platform: 'fcm', token: 'later-token' }, subscribed: true, eventAt: '2025-03-01T00:00:00Z' },
      { app: 'app-a', topic: 'news', member: { userId: 'user-without-device' }, subscribed: true, eventAt: '2025-03-01T00:00:00Z' },
    ]);
  });

  it('walks user members then device members, each device once, with users lacking a device counted', async () => {
    await t.db.devices.applyRegistrations([reg(9999, { platform: 'fcm', token: 'later-token', userId: 'late-user' })]);
    const { devices, usersWithoutDevice } = await walk({ kind: 'topic', topic: 'news' }, 500);
    const expected = [...Array.from({ length: N / 2 }, (_, k) => `user-${k * 2}`), 'user-3', 'late-user'];
    expect(devices.map((d) => d.userId).sort()).toEqual(expected.sort());
    expect(new Set(devices.map((d) => d.deviceId)).size).toBe(devices.length);
    // The device members' pushes are addressed to the device; the user members', to the user.
    expect(devices.filter((d) => d.toDevice === true).map((d) => d.userId).sort()).toEqual(['late-user', 'user-3']);
    expect(usersWithoutDevice).toBe(1);
    expect(await audienceSize(t.db, { app: 'app-a', audience: { kind: 'topic', topic: 'news' } })).toEqual({ size: N / 2 + 4, exact: false });
  });

  it('last event wins: a late older subscribe cannot undo a newer unsubscribe, and the count follows', async () => {
    const ev = (subscribed: boolean, eventAt: string) => ({ app: 'app-a', topic: 'news', member: { userId: 'user-0' }, subscribed, eventAt });
    expect(await applyTopicMemberships(t.db.kysely, [ev(false, '2025-04-01T00:00:00Z')])).toEqual(['applied']);
    expect(await applyTopicMemberships(t.db.kysely, [ev(true, '2025-03-15T00:00:00Z')])).toEqual(['stale']);
    expect((await audienceSize(t.db, { app: 'app-a', audience: { kind: 'topic', topic: 'news' } })).size).toBe(N / 2 + 3);
    const { devices } = await walk({ kind: 'topic', topic: 'news', segment: segment('platform = "apns"') }, 400);
    expect(devices.map((d) => d.userId)).not.toContain('user-0');
    expect(devices.every((d) => d.platform === 'apns')).toBe(true);
    // Within one batch the newest event wins whatever the order.
    expect(await applyTopicMemberships(t.db.kysely, [ev(true, '2025-05-02T00:00:00Z'), ev(false, '2025-05-01T00:00:00Z')])).toEqual(['applied', 'stale']);
    expect((await audienceSize(t.db, { app: 'app-a', audience: { kind: 'topic', topic: 'news' } })).size).toBe(N / 2 + 4);
  });

  it('a chunk read again up to the cursor it first ended at covers exactly that range, members added since included', async () => {
    const req = { app: 'app-a', audience: { kind: 'topic', topic: 'news' } as const, category: 'news', after: null, limit: 40, now: NOW };
    const first = await readAudienceChunk(t.db, req);
    const users = new Set(first.devices.map((d) => d.userId));
    expect(first.next).not.toBeNull();
    // Odd users sort among the even ones already read (user-10 < user-1001 < user-1002 ...).
    const added = ['user-1003', 'user-1005', 'user-1007'];
    const lastRead = [...users].sort().at(-1) ?? '';
    const inRange = added.filter((u) => u < lastRead);
    expect(inRange.length).toBeGreaterThan(0);
    await applyTopicMemberships(t.db.kysely, added.map((u) => ({ app: 'app-a', topic: 'news', member: { userId: u }, subscribed: true, eventAt: '2025-03-02T00:00:00Z' })));
    const again = await readAudienceChunk(t.db, { ...req, until: first.next ?? '' });
    expect(again.next).toBe(first.next);
    expect(new Set(again.devices.map((d) => d.userId))).toEqual(new Set([...users, ...inRange]));
    // Read with a fresh limit instead, the chunk would end earlier: the members between would be in no chunk.
    const fresh = await readAudienceChunk(t.db, req);
    expect(fresh.next).not.toBe(first.next);
    await applyTopicMemberships(t.db.kysely, added.map((u) => ({ app: 'app-a', topic: 'news', member: { userId: u }, subscribed: false, eventAt: '2025-03-03T00:00:00Z' })));
  });

  it("given the fan-out's start snapshot, reads the members as they were then: a user who unsubscribes between the phases is not read again through a device membership", async () => {
    await createTopic(t.db.kysely, 'app-a', 'sports');
    const member = (m: { userId: string } | { platform: 'apns' | 'fcm'; token: string }, subscribed = true, eventAt = '2025-03-01T00:00:00Z') => ({ app: 'app-a', topic: 'sports', member: m, subscribed, eventAt });
    // user-12's own device is also a device member (hidden while its user is a member); user-15's device is a member by itself.
    await applyTopicMemberships(t.db.kysely, [member({ userId: 'user-10' }), member({ userId: 'user-12' }), member({ userId: 'user-20' }), member({ platform: 'apns', token: 'tok-12' }), member({ platform: 'fcm', token: 'tok-15' })]);
    const asOf = (await sql<{ s: string }>`select pg_current_snapshot()::text as s`.execute(t.db.kysely)).rows[0]?.s ?? '';
    const req = { app: 'app-a', audience: { kind: 'topic', topic: 'sports' } as const, category: 'news', now: NOW };
    const first = await readAudienceChunk(t.db, { ...req, after: null, limit: 2, asOf });
    expect(first.devices.map((d) => d.token)).toEqual(['tok-10', 'tok-12']);
    // Meanwhile: user-12 unsubscribes (already read), user-11 (before the cursor) and user-16 (after it) subscribe.
    await applyTopicMemberships(t.db.kysely, [member({ userId: 'user-12' }, false, '2025-04-01T00:00:00Z'), member({ userId: 'user-11' }), member({ userId: 'user-16' })]);
    const rest = async (options: { asOf?: string }) => {
      const tokens: string[] = [];
      let after = first.next;
      for (let i = 0; after !== null && i < 20; i += 1) {
        const chunk = await readAudienceChunk(t.db, { ...req, after, limit: 2, ...options });
        tokens.push(...chunk.devices.map((d) => d.token));
        after = chunk.next;
      }
      return tokens;
    };
    // As of the start: user-20 and the device member tok-15; tok-12 came with its user in the first chunk, once.
    expect(await rest({ asOf })).toEqual(['tok-20', 'tok-15']);
    // The members of the moment would read tok-12 a second time (and user-16, who was not a member at the start).
    expect(await rest({})).toEqual(['tok-16', 'tok-20', 'tok-12', 'tok-15']);
    // The first chunk redone covers the same range and takes in no one who joined since (user-11, read as of the moment).
    const again = await readAudienceChunk(t.db, { ...req, after: null, until: first.next ?? '', limit: 2, asOf });
    expect(again.devices.map((d) => d.token)).toEqual(['tok-10']);
    expect((await readAudienceChunk(t.db, { ...req, after: null, until: first.next ?? '', limit: 2 })).devices.map((d) => d.token)).toEqual(['tok-10', 'tok-11']);
  });

  describe('a device member whose token is replaced (previousToken)', () => {
    const topicOf = (name: string) => ({ app: 'app-a', audience: { kind: 'topic', topic: name } as const, category: 'news', now: NOW });
    const device = (token: string, user: string) => t.db.devices.applyRegistration(reg(0, { platform: 'fcm', token, userId: user }));
    const rotate = (from: string, to: string, user: string) => t.db.devices.applyRegistration(reg(0, { platform: 'fcm', token: to, previousToken: from, userId: user, eventAt: new Date().toISOString() }));
    const membership = (name: string, token: string, subscribed: boolean) =>
      applyTopicMemberships(t.db.kysely, [{ app: 'app-a', topic: name, member: { platform: 'fcm', token }, subscribed, eventAt: new Date().toISOString() }]);
    /** A device of `user`, subscribed to the topic `name` as a device member. */
    const member = async (name: string, token: string, user: string) => {
      await device(token, user);
      await membership(name, token, true);
    };
    /** A fan-out's start as fanout-repository records it: its snapshot. */
    const started = async () => ({ asOf: (await sql<{ s: string }>`select pg_current_snapshot()::text as s`.execute(t.db.kysely)).rows[0]?.s ?? '' });
    /** Each chunk's tokens, one member a chunk, from `after`. */
    const walkFrom = async (name: string, start: { asOf: string }, after: string | null = null) => {
      const chunks: string[][] = [];
      for (let i = 0; i < 20; i += 1) {
        const chunk = await readAudienceChunk(t.db, { ...topicOf(name), ...start, after, limit: 1 });
        chunks.push(chunk.devices.map((d) => d.token));
        if ((after = chunk.next) === null) break;
      }
      return chunks.flat();
    };

    it("while the fan-out runs is read as its new token, once: the new token's membership came after the start, and the old one's device is dead", async () => {
      await createTopic(t.db.kysely, 'app-a', 'rotating');
      for (const token of ['rot-1', 'rot-2', 'rot-3']) await member('rotating', token, `${token}-user`);
      const start = await started();
      const first = await readAudienceChunk(t.db, { ...topicOf('rotating'), ...start, after: null, limit: 1 });
      expect(first.devices.map((d) => d.token)).toEqual(['rot-1']);
      // Meanwhile rot-1 (read) and rot-3 (not yet read) get new tokens, which sort before the cursor.
      for (const from of ['rot-1', 'rot-3']) await rotate(from, `a-${from}`, `${from}-user`);
      // rot-1's push, made for its old token, goes to the new one (the pushers' claim); rot-3's is made for its new token.
      expect(await walkFrom('rotating', start, first.next)).toEqual(['rot-2', 'a-rot-3']);
      // A fan-out started after the rotations reads each new token by its own membership, once.
      expect(await walkFrom('rotating', await started())).toEqual(['a-rot-1', 'a-rot-3', 'rot-2']);
    });

    it('twice, before and while the fan-out runs, is read once: only the member whose link came after the start is read as the new token', async () => {
      await createTopic(t.db.kysely, 'app-a', 'chained');
      await member('chained', 'ch-a', 'ch-user');
      await rotate('ch-a', 'ch-b', 'ch-user');
      const start = await started();
      await rotate('ch-b', 'ch-c', 'ch-user');
      // ch-a's and ch-b's memberships both remain, each of a dead device whose chain ends at ch-c.
      expect(await walkFrom('chained', start)).toEqual(['ch-c']);
    });

    it('by a rotation that wrote its link before the fan-out started and committed after its snapshot (waiting for a topic) is read as its new token', async () => {
      await createTopic(t.db.kysely, 'app-a', 'held');
      await member('held', 'hd-a', 'hd-user');
      let release = (): void => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let locked = (): void => undefined;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      // A membership batch holding the topic, as applyTopicMemberships locks it: the rotation writes its link, then waits to copy the membership.
      const holder = t.db.kysely.transaction().execute(async (trx) => {
        await sql`select 1 from topics where app = 'app-a' and name = 'held' for no key update`.execute(trx);
        locked();
        await gate;
      });
      await isLocked;
      const rotation = rotate('hd-a', 'hd-b', 'hd-user');
      await waitFor('the rotation waiting for the topic', async () =>
        (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%previous_token%'`.execute(t.db.kysely)).rows[0]?.n ? true : undefined,
      );
      const start = await started();
      release();
      await holder;
      await rotation;
      expect(await walkFrom('held', start)).toEqual(['hd-b']);
    });

    it('before the fan-out is left to the new token\'s own membership as of the start: unsubscribed while the fan-out runs, it gets nothing, as a member that was not replaced', async () => {
      await createTopic(t.db.kysely, 'app-a', 'leaving');
      for (const [token, user] of [['lv-a', 'lv-user'], ['lv-plain', 'lv-plain-user']] as const) await member('leaving', token, user);
      await rotate('lv-a', 'lv-c', 'lv-user');
      const start = await started();
      for (const token of ['lv-c', 'lv-plain']) await membership('leaving', token, false);
      expect(await walkFrom('leaving', start)).toEqual([]);
    });

    it("before the fan-out, whose new token is read at its own place and then unsubscribes and subscribes again, is read once: the old member's link is in the start snapshot", async () => {
      await createTopic(t.db.kysely, 'app-a', 'flipping');
      await member('flipping', 'fz-old', 'fz-user');
      await rotate('fz-old', 'fb-new', 'fz-user');
      const start = await started();
      const first = await readAudienceChunk(t.db, { ...topicOf('flipping'), ...start, after: null, limit: 1 });
      expect(first.devices.map((d) => d.token)).toEqual(['fb-new']);
      await membership('flipping', 'fb-new', false);
      await membership('flipping', 'fb-new', true);
      expect(await walkFrom('flipping', start, first.next)).toEqual([]);
    });

    it('while the fan-out runs, and then unsubscribed, gets nothing', async () => {
      await createTopic(t.db.kysely, 'app-a', 'rotate-leave');
      await member('rotate-leave', 'rl-a', 'rl-user');
      const start = await started();
      await rotate('rl-a', 'rl-c', 'rl-user');
      await membership('rotate-leave', 'rl-c', false);
      expect(await walkFrom('rotate-leave', start)).toEqual([]);
    });
  });

  it("reads members restored from another cluster (a pg_dump into a new one keeps their transaction ids, far ahead of the new cluster's) as members since before the fan-out", async () => {
    await createTopic(t.db.kysely, 'app-a', 'restored');
    await applyTopicMemberships(t.db.kysely, ['user-10', 'user-20'].map((u) => ({ app: 'app-a', topic: 'restored', member: { userId: u }, subscribed: true, eventAt: '2025-03-01T00:00:00Z' })));
    await applyTopicMemberships(t.db.kysely, [{ app: 'app-a', topic: 'restored', member: { platform: 'fcm', token: 'tok-15' }, subscribed: true, eventAt: '2025-03-01T00:00:00Z' }]);
    await sql`update topic_members set changed_xid = (pg_snapshot_xmax(pg_current_snapshot())::text::bigint + 10000000)::text::xid8 where app = 'app-a' and topic = 'restored'`.execute(t.db.kysely);
    const asOf = (await sql<{ s: string }>`select pg_current_snapshot()::text as s`.execute(t.db.kysely)).rows[0]?.s ?? '';
    const chunk = await readAudienceChunk(t.db, { app: 'app-a', audience: { kind: 'topic', topic: 'restored' }, category: 'news', now: NOW, after: null, limit: 10, asOf });
    expect(chunk.devices.map((d) => d.token)).toEqual(['tok-10', 'tok-20', 'tok-15']);
  });

  it('refuses members of an unknown topic and changes nothing', async () => {
    expect(await applyTopicMemberships(t.db.kysely, [{ app: 'app-a', topic: 'nope', member: { userId: 'user-1' }, subscribed: true, eventAt: NOW.toISOString() }])).toEqual(['unknown-topic']);
  });
});

describe('followers', () => {
  const follow = (follower: string, following: boolean, eventAt: string) => ({ app: 'app-a', followee: 'star', follower, following, eventAt });

  beforeAll(async () => {
    await applyFollowEvents(
      t.db.kysely,
      Array.from({ length: 1200 }, (_, i) => follow(`user-${i}`, true, '2025-03-01T00:00:00Z')),
      { cap: 100, min: 50, maxAgeMs: 86_400_000 },
    );
  });

  it('walks every follower with a device once; an out-of-order follow does not undo an unfollow', async () => {
    expect(await applyFollowEvents(t.db.kysely, [follow('user-5', false, '2025-04-01T00:00:00Z'), follow('user-5', true, '2025-03-20T00:00:00Z')], { cap: 100, min: 50, maxAgeMs: 86_400_000 })).toEqual(['applied', 'stale']);
    const { devices } = await walk({ kind: 'followers', of: 'star' }, 250);
    const expected = Array.from({ length: 1200 }, (_, i) => i).filter((i) => i !== 5 && !(i % 100 === 1 && i < 2500));
    expect(devices.map((d) => d.userId).sort()).toEqual(expected.map((i) => `user-${i}`).sort());
    expect(await audienceSize(t.db, { app: 'app-a', audience: { kind: 'followers', of: 'star' } })).toEqual({ size: 1199, exact: false });
  });

  it('a follower of the N most recent who becomes active while the walk runs is still read', async () => {
    const audience: AudienceSpec = { kind: 'followers', of: 'star', mostRecent: 30 };
    const first = await readAudienceChunk(t.db, { app: 'app-a', audience, category: 'news', after: null, limit: 7, now: NOW });
    const all = (await walk(audience, 7)).devices.map((d) => d.userId);
    const read = new Set(first.devices.map((d) => d.userId));
    const later = all.filter((u) => !read.has(u));
    expect(later.length).toBeGreaterThan(0);
    // Activity moves a follower not yet read to the top of the recently-active order.
    await t.db.kysely.updateTable('follower_recent').set({ active_at: new Date(NOW.getTime() + 60_000) }).where('followee', '=', 'star').where('follower', '=', later.at(-1) ?? '').execute();
    const rest: string[] = [];
    let after = first.next;
    while (after !== null) {
      const chunk = await readAudienceChunk(t.db, { app: 'app-a', audience, category: 'news', after, limit: 7, now: NOW });
      rest.push(...chunk.devices.map((d) => d.userId));
      after = chunk.next;
    }
    expect(new Set([...read, ...rest])).toEqual(new Set(all));
  });

  it('the most recently active N come from the capped index', async () => {
    const { devices } = await walk({ kind: 'followers', of: 'star', mostRecent: 30 }, 7);
    expect(devices).toHaveLength(30);
    const seen = devices.map((d) => Number(d.userId.slice(5)) % 60);
    expect(seen.every((s) => s <= 1)).toBe(true); // lastSeen i % 60 days ago: the 30 newest are 0 or 1 day old
    expect(new Set(devices.map((d) => d.userId)).size).toBe(30);
  });

  it('followers active within D days, read from the index (at most its cap)', async () => {
    const { devices } = await walk({ kind: 'followers', of: 'star', activeWithinDays: 1 }, 9);
    expect(devices.every((d) => Number(d.userId.slice(5)) % 60 <= 1)).toBe(true);
    expect(devices.length).toBeGreaterThan(0);
    expect(devices.length).toBeLessThanOrEqual(100);
  });
});
