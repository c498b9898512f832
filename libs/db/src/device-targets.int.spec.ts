import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Registration } from '@herald/contracts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { createDatabase, type Database } from './database.ts';
import type { TargetDevice } from './device-targets.ts';

const USERS = 5_000;
const NOW = new Date('2025-06-01T12:00:00Z');
const userId = (i: number) => `user-${i}`;
const allUsers = Array.from({ length: USERS }, (_, i) => userId(i));

let t: SpecDatabase;
let counted: Database;
const queries: string[] = [];

const reg = (app: string, platform: 'apns' | 'fcm', i: number, kind: 'register' | 'unregister' = 'register'): Registration =>
  kind === 'register'
    ? {
        version: 1,
        kind,
        app,
        platform,
        token: `${app}-${platform}-${i}`,
        userId: userId(i),
        timezone: 'UTC',
        eventAt: '2025-01-01T00:00:00Z',
      }
    : { version: 1, kind, app, platform, token: `${app}-${platform}-${i}`, eventAt: '2025-01-02T00:00:00Z' };

beforeAll(async () => {
  t = await createSpecDatabase('targets');
  await t.db.apps.upsert({ id: 'app-a' });
  await t.db.apps.upsert({ id: 'app-b' });
  const idx = [...allUsers.keys()];
  await t.db.devices.applyRegistrations([
    ...idx.map((i) => reg('app-a', 'apns', i)),
    ...idx.filter((i) => i % 2 === 0).map((i) => reg('app-a', 'fcm', i)),
    ...idx.filter((i) => i < 100).map((i) => reg('app-b', 'fcm', i)),
  ]);
  // Every 5th user's apns device is unregistered (their fcm device, if any, stays).
  await t.db.devices.applyRegistrations(idx.filter((i) => i % 5 === 0).map((i) => reg('app-a', 'apns', i, 'unregister')));
  const optOuts = idx.filter((i) => i % 7 === 0).map((i) => ({ user_id: userId(i), category: 'marketing' }));
  await t.db.kysely.insertInto('opt_outs').values(optOuts).execute();
  const mute = (i: number, until: Date | null) => ({ user_id: userId(i), object_id: 'thread:1', until });
  await t.db.kysely
    .insertInto('mutes')
    .values([
      ...idx.filter((i) => i % 11 === 0).map((i) => mute(i, null)),
      ...idx.filter((i) => i % 13 === 0 && i % 11 !== 0).map((i) => mute(i, new Date(NOW.getTime() - 1000))),
      ...idx.filter((i) => i % 17 === 0 && i % 11 !== 0 && i % 13 !== 0).map((i) => mute(i, new Date(NOW.getTime() + 60_000))),
    ])
    .execute();
  counted = createDatabase({ url: t.url, schema: t.schema, poolSize: 1, onQuery: (q) => queries.push(q.sql) });
});
afterAll(async () => {
  await counted.close();
  await t.drop();
});

/** What findTargets should return for app-a, computed from the fixture rules above. */
function expectedTokens(users: number[], excludeUser: (i: number) => boolean): string[] {
  return users
    .filter((i) => !excludeUser(i))
    .flatMap((i) => [...(i % 5 !== 0 ? [`app-a-apns-${i}`] : []), ...(i % 2 === 0 ? [`app-a-fcm-${i}`] : [])])
    .sort();
}
const tokens = (devices: TargetDevice[] | undefined) => (devices ?? []).map((d) => d.token).sort();
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('DeviceRepository.findTargets', () => {
  it('answers many jobs × thousands of users in a single query with the right devices', async () => {
    queries.length = 0;
    const jobs = [
      { key: 'marketing', app: 'app-a', userIds: allUsers, category: 'marketing' },
      { key: 'thread', app: 'app-a', userIds: allUsers, category: 'social', objectId: 'thread:1' },
      { key: 'other-object', app: 'app-a', userIds: allUsers, category: 'social', objectId: 'thread:2' },
      { key: 'app-b', app: 'app-b', userIds: allUsers.slice(0, 300), category: 'marketing' },
      { key: 'unknown-users', app: 'app-a', userIds: ['nobody', 'nobody-else'], category: 'social' },
      { key: 'no-users', app: 'app-a', userIds: [], category: 'social' },
      { key: 'dupes', app: 'app-a', userIds: [userId(2), userId(2), userId(3)], category: 'social' },
    ];
    const result = await counted.devices.findTargets(jobs, NOW);
    expect(queries).toHaveLength(1);
    expect([...result.keys()].sort()).toEqual(jobs.map((j) => j.key).sort());
    expect(tokens(result.get('marketing'))).toEqual(expectedTokens(range(USERS), (i) => i % 7 === 0));
    expect(tokens(result.get('thread'))).toEqual(
      expectedTokens(range(USERS), (i) => i % 11 === 0 || (i % 17 === 0 && i % 13 !== 0)),
    );
    expect(tokens(result.get('other-object'))).toEqual(expectedTokens(range(USERS), () => false));
    expect(tokens(result.get('app-b'))).toEqual(
      range(100)
        .filter((i) => i % 7 !== 0)
        .map((i) => `app-b-fcm-${i}`)
        .sort(),
    );
    expect(result.get('unknown-users')).toEqual([]);
    expect(result.get('no-users')).toEqual([]);
    expect(tokens(result.get('dupes'))).toEqual(['app-a-apns-2', 'app-a-apns-3', 'app-a-fcm-2']);
  });

  it('returns the device details a pusher needs', async () => {
    const result = await t.db.devices.findTargets([{ key: 'k', app: 'app-a', userIds: [userId(4)], category: 'c' }], NOW);
    const [fcm] = (result.get('k') ?? []).filter((d) => d.platform === 'fcm');
    expect(fcm).toEqual({
      deviceId: expect.stringMatching(/^\d+$/),
      userId: userId(4),
      app: 'app-a',
      platform: 'fcm',
      token: 'app-a-fcm-4',
      tokenKind: 'device',
      timezone: 'UTC',
      locale: null,
    });
  });

  it('follows preference changes made through PreferenceRepository', async () => {
    const u = userId(1);
    const find = async (objectId?: string) =>
      tokens(
        (
          await t.db.devices.findTargets(
            [{ key: 'k', app: 'app-a', userIds: [u], category: 'news', ...(objectId ? { objectId } : {}) }],
            NOW,
          )
        ).get('k'),
      );
    expect(await find()).toEqual(['app-a-apns-1']);
    await t.db.preferences.setOptOut(u, 'news', true);
    await t.db.preferences.setOptOut(u, 'news', true);
    expect(await find()).toEqual([]);
    await t.db.preferences.setOptOut(u, 'news', false);
    expect(await find()).toEqual(['app-a-apns-1']);
    await t.db.preferences.setMute(u, 'post:9', null);
    expect(await find('post:9')).toEqual([]);
    await t.db.preferences.setMute(u, 'post:9', new Date(NOW.getTime() - 1));
    expect(await find('post:9')).toEqual(['app-a-apns-1']);
    await t.db.preferences.setMute(u, 'post:9', new Date(NOW.getTime() + 1));
    expect(await find('post:9')).toEqual([]);
    await t.db.preferences.clearMute(u, 'post:9');
    expect(await find('post:9')).toEqual(['app-a-apns-1']);
  });

  it('makes no query when there is nobody to look up', async () => {
    queries.length = 0;
    const result = await counted.devices.findTargets([{ key: 'k', app: 'app-a', userIds: [], category: 'c' }], NOW);
    expect(result.get('k')).toEqual([]);
    expect(queries).toHaveLength(0);
  });
});
