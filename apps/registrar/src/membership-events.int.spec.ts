import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAudienceStore, eraseUser } from '@herald/db';
import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { createRegistrarHandler } from './registrar.ts';

const logger = createLogger({ service: 'registrar-test', level: 'silent' });
let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase('registrar_members');
  await t.db.apps.upsert({ id: 'chat' });
  await t.db.kysely.insertInto('topics').values({ app: 'chat', name: 'news' }).execute();
});
afterAll(async () => t?.drop());

const message = (body: unknown) => ({
  body: Buffer.from(JSON.stringify(body)),
  headers: {},
  routingKey: 'push.registrations',
  redelivered: false,
  attempt: 1,
  queue: 'push.registrations',
});
const member = (extra: Record<string, unknown>) => ({ kind: 'topic-membership', app: 'chat', topic: 'news', userId: 'u1', subscribed: true, eventAt: '2025-03-01T10:00:00Z', ...extra });
const count = async () => Number((await t.db.kysely.selectFrom('topics').select('subscriber_count').where('name', '=', 'news').executeTakeFirstOrThrow()).subscriber_count);

describe('registrar: topic memberships and follow events on push.registrations', () => {
  it('applies good events (last event wins) and parks bad ones with a reason', async () => {
    const handle = createRegistrarHandler({ devices: t.db.devices, audiences: createAudienceStore(t.db.kysely), apps: t.db.apps, logger });
    const outcomes = await handle([
      message(member({ subscribed: false, eventAt: '2025-03-02T00:00:00Z' })),
      message(member({})),
      message(member({ userId: 'u2' })),
      message(member({ topic: 'sport' })),
      message(member({ userId: undefined })),
      message(member({ app: 'ghost' })),
      message({ kind: 'follow', app: 'chat', follower: 'u1', followee: 'u9', following: true, eventAt: '2025-03-01T10:00:00Z' }),
      message({ kind: 'follow', app: 'chat', follower: 'u1', followee: 'u1', following: true, eventAt: '2025-03-01T10:00:00Z' }),
    ]);
    expect(outcomes.slice(0, 3)).toEqual([{ kind: 'ack' }, { kind: 'ack' }, { kind: 'ack' }]);
    expect(outcomes[3]).toEqual({ kind: 'park', code: 'unknown-topic', reason: 'unknown topic "sport" of app "chat"' });
    expect(outcomes[4]).toMatchObject({ kind: 'park', code: 'schema', reason: expect.stringContaining('exactly one of userId and device') });
    expect(outcomes[5]).toEqual({ kind: 'park', code: 'unknown-app', reason: 'unknown app "ghost"' });
    expect(outcomes[6]).toEqual({ kind: 'ack' });
    expect(outcomes[7]).toMatchObject({ kind: 'park', code: 'schema', reason: expect.stringContaining('followee: a user cannot follow themselves') });
    // u1's newer unsubscribe beat its older subscribe in the same batch; u2 subscribed.
    expect(await count()).toBe(1);
    const edge = await t.db.kysely.selectFrom('follows').selectAll().where('followee', '=', 'u9').executeTakeFirst();
    expect(edge?.following).toBe(true);
  });

  it("applies a disabled app's unsubscribe and unfollow (and its joins, as the HTTP API does): acked, the membership removed", async () => {
    await t.db.apps.upsert({ id: 'paused', enabled: true });
    await t.db.kysely.insertInto('topics').values({ app: 'paused', name: 'deals' }).execute();
    const handle = createRegistrarHandler({ devices: t.db.devices, audiences: createAudienceStore(t.db.kysely), apps: t.db.apps, logger });
    const deals = (extra: Record<string, unknown>) => member({ app: 'paused', topic: 'deals', ...extra });
    const follow = (following: boolean, eventAt: string) => ({ kind: 'follow', app: 'paused', follower: 'u1', followee: 'u7', following, eventAt });
    expect(await handle([message(deals({})), message(follow(true, '2025-03-01T10:00:00Z'))])).toEqual([{ kind: 'ack' }, { kind: 'ack' }]);
    // An incident: the app is disabled; the user leaves the topic and unfollows, another joins.
    await t.db.apps.upsert({ id: 'paused', enabled: false });
    const outcomes = await handle([message(deals({ subscribed: false, eventAt: '2025-03-02T00:00:00Z' })), message(follow(false, '2025-03-02T00:00:00Z')), message(deals({ userId: 'u3' }))]);
    expect(outcomes).toEqual([{ kind: 'ack' }, { kind: 'ack' }, { kind: 'ack' }]);
    const members = await t.db.kysely.selectFrom('topic_members').select(['member_id', 'subscribed']).where('app', '=', 'paused').where('topic', '=', 'deals').orderBy('member_id').execute();
    expect(members.filter((m) => m.subscribed).map((m) => m.member_id)).toEqual(['u3']);
    const edge = await t.db.kysely.selectFrom('follows').select('following').where('app', '=', 'paused').where('followee', '=', 'u7').executeTakeFirst();
    expect(edge?.following).toBe(false);
  });
});

const apns = (label: string): string => createHash('sha256').update(label).digest('hex');
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const named = async (userId: string) => ({
  devices: (await t.db.kysely.selectFrom('devices').select('token').where('user_id', '=', userId).execute()).length,
  members: (await t.db.kysely.selectFrom('topic_members').select('topic').where('member_id', '=', userId).execute()).length,
  follows: (await t.db.kysely.selectFrom('follows').select('app').where((w) => w.or([w('follower', '=', userId), w('followee', '=', userId)])).execute()).length,
});

describe('registrar: events of a user erased since they were sent', () => {
  it("a register of a new token, a subscribe and follows sent before the erasure are acked as stale, not stored; the same events sent after it apply", async () => {
    const registry = new Registry();
    const handle = createRegistrarHandler({
      devices: t.db.devices,
      audiences: createAudienceStore(t.db.kysely),
      apps: t.db.apps,
      logger,
      registry,
    });
    await eraseUser(t.db.kysely, 'chat', 'gone');
    const before = ago(60_000);
    const events = (eventAt: string, label: string) => [
      message({ kind: 'register', app: 'chat', platform: 'apns', token: apns(label), userId: 'gone', eventAt }),
      message({ kind: 'topic-membership', app: 'chat', topic: 'news', userId: 'gone', subscribed: true, eventAt }),
      message({ kind: 'topic-membership', app: 'chat', topic: 'news', userId: 'gone', subscribed: false, eventAt }),
      message({ kind: 'follow', app: 'chat', follower: 'gone', followee: 'stays', following: true, eventAt }),
      message({ kind: 'follow', app: 'chat', follower: 'stays', followee: 'gone', following: true, eventAt }),
      // Another user's events in the same batch apply.
      message({ kind: 'register', app: 'chat', platform: 'apns', token: apns(`${label}-other`), userId: 'stays', eventAt }),
    ];
    const late = await handle(events(before, 'late'));
    expect(late).toEqual(late.map(() => ({ kind: 'ack' })));
    expect(await named('gone')).toEqual({ devices: 0, members: 0, follows: 0 });
    expect((await named('stays')).devices).toBe(1);
    expect(await registry.metrics()).toContain('herald_registrations_total{kind="register",result="stale"} 1');
    // The user signs up again: events from after the erasure are theirs.
    await handle(events(new Date(Date.now() + 1_000).toISOString(), 'again'));
    expect(await named('gone')).toEqual({ devices: 1, members: 1, follows: 2 });
  });
});
