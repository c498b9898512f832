import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Registration } from '@herald/contracts';
import { createDatabase, dropSchemaAndClose } from './database.ts';
import { DEFAULT_MIGRATIONS_DIR } from './migrations.ts';
import { createSpecDatabase, SPEC_DATABASE_URL, type SpecDatabase } from './spec-database.ts';

const NOW = new Date('2026-03-01T12:00:00Z');
const reg = (app: string, userId: string): Registration => ({
  version: 1,
  kind: 'register',
  app,
  platform: 'apns',
  token: `${app}${userId}`.replace(/[^0-9a-f]/g, 'a').padEnd(64, '0'),
  userId,
  eventAt: '2026-01-01T00:00:00Z',
});

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('prefs');
  for (const id of ['app-a', 'app-b']) await t.db.apps.upsert({ id });
});
afterAll(async () => {
  await t.drop();
});

/** Which of the two apps would push to the user for this category / object. */
async function reached(userId: string, category: string, objectId?: string): Promise<string[]> {
  const found = await t.db.devices.findTargets(
    ['app-a', 'app-b'].map((app) => ({ key: app, app, userIds: [userId], category, ...(objectId !== undefined && { objectId }) })),
    NOW,
  );
  return ['app-a', 'app-b'].filter((app) => (found.get(app) ?? []).length > 0);
}

describe('per-app opt-outs and mutes', () => {
  it('an opt-out of one app silences only that app; an every-app opt-out silences both', async () => {
    const u = `u-${randomBytes(3).toString('hex')}`;
    await t.db.devices.applyRegistrations([reg('app-a', u), reg('app-b', u)]);
    expect(await reached(u, 'news')).toEqual(['app-a', 'app-b']);
    expect(await t.db.preferences.addOptOut(u, 'news', 'app-a')).toMatchObject({ created: true, optOut: { app: 'app-a', userId: u, category: 'news' } });
    expect((await t.db.preferences.addOptOut(u, 'news', 'app-a')).created).toBe(false);
    expect(await reached(u, 'news')).toEqual(['app-b']);
    expect(await reached(u, 'other')).toEqual(['app-a', 'app-b']);
    expect(await t.db.preferences.setOptOut(u, 'news', true)).toBe(true);
    expect(await t.db.preferences.setOptOut(u, 'news', true)).toBe(false);
    expect(await reached(u, 'news')).toEqual([]);
    // Listing for app-b shows the every-app row only; for app-a both; without an app, every row.
    expect((await t.db.preferences.listOptOuts(u, { app: 'app-b' })).map((o) => o.app)).toEqual([null]);
    expect((await t.db.preferences.listOptOuts(u, { app: 'app-a' })).map((o) => o.app).sort()).toEqual(['app-a', null].sort());
    expect(await t.db.preferences.listOptOuts(u)).toHaveLength(2);
    // Removing the per-app row leaves the every-app row in force, and the other way round.
    expect(await t.db.preferences.setOptOut(u, 'news', false, 'app-a')).toBe(true);
    expect(await reached(u, 'news')).toEqual([]);
    expect(await t.db.preferences.setOptOut(u, 'news', false)).toBe(true);
    expect(await reached(u, 'news')).toEqual(['app-a', 'app-b']);
    expect(await t.db.preferences.setOptOut(u, 'news', false, 'app-a')).toBe(false);
  });

  it('a mute of one app silences only that app, until it ends; an every-app mute silences both', async () => {
    const u = `u-${randomBytes(3).toString('hex')}`;
    await t.db.devices.applyRegistrations([reg('app-a', u), reg('app-b', u)]);
    const first = await t.db.preferences.setMute(u, 'thread:1', null, 'app-b');
    expect(first).toMatchObject({ created: true, mute: { app: 'app-b', objectId: 'thread:1', until: null } });
    expect(await reached(u, 'c', 'thread:1')).toEqual(['app-a']);
    expect(await reached(u, 'c', 'thread:2')).toEqual(['app-a', 'app-b']);
    // Replacing the mute with one that has ended: app-b is reached again, and the list drops it.
    const ended = new Date(NOW.getTime() - 1000);
    expect((await t.db.preferences.setMute(u, 'thread:1', ended, 'app-b')).created).toBe(false);
    expect(await reached(u, 'c', 'thread:1')).toEqual(['app-a', 'app-b']);
    expect(await t.db.preferences.listMutes(u, NOW, { app: 'app-b' })).toEqual([]);
    await t.db.preferences.setMute(u, 'thread:1', new Date(NOW.getTime() + 60_000));
    expect(await reached(u, 'c', 'thread:1')).toEqual([]);
    expect((await t.db.preferences.listMutes(u, NOW, { app: 'app-a' })).map((m) => m.app)).toEqual([null]);
    expect(await t.db.preferences.clearMute(u, 'thread:1')).toBe(true);
    expect(await t.db.preferences.clearMute(u, 'thread:1')).toBe(false);
    expect(await reached(u, 'c', 'thread:1')).toEqual(['app-a', 'app-b']);
  });

  it("an app's preferences go with the app (the foreign key cascades)", async () => {
    await t.db.apps.upsert({ id: 'app-gone' });
    await t.db.preferences.addOptOut('u-x', 'news', 'app-gone');
    await t.db.kysely.deleteFrom('apps').where('id', '=', 'app-gone').execute();
    expect(await t.db.preferences.listOptOuts('u-x')).toEqual([]);
  });
});

describe('migration 0018', () => {
  it('keeps opt-outs and mutes made before it meaning every app', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'herald-migrations-'));
    const schema = `herald_m18_${randomBytes(4).toString('hex')}`;
    const before = (await readdir(DEFAULT_MIGRATIONS_DIR)).filter((f) => f < '0018');
    for (const f of before) await cp(join(DEFAULT_MIGRATIONS_DIR, f), join(dir, f));
    const old = createDatabase({ url: SPEC_DATABASE_URL, schema, migrationsDir: dir });
    const db = createDatabase({ url: SPEC_DATABASE_URL, schema });
    try {
      await old.migrate();
      // Apps and devices as the code before 0018 wrote them (today's repositories name columns later migrations add).
      for (const app of ['app-a', 'app-b']) {
        const { token, eventAt } = reg(app, 'legacy');
        await old.kysely.insertInto('apps').values({ id: app, apns_topic: null, fcm_project_id: null }).execute();
        await old.kysely
          .insertInto('devices')
          .values({ app, platform: 'apns', token, user_id: 'legacy', timezone: null, locale: null, registered_at: new Date(eventAt), last_event_at: new Date(eventAt), invalidated_at: null, invalidation_reason: null })
          .execute();
      }
      // Rows as they were written before: no app column.
      await old.kysely.insertInto('opt_outs').values({ user_id: 'legacy', category: 'news' }).execute();
      await old.kysely.insertInto('mutes').values({ user_id: 'legacy', object_id: 'thread:9', until: null }).execute();
      await db.migrate();
      expect(await db.preferences.listOptOuts('legacy', { app: 'app-b' })).toMatchObject([{ app: null, category: 'news' }]);
      const targets = await db.devices.findTargets(
        ['app-a', 'app-b'].flatMap((app) => [
          { key: `${app}-news`, app, userIds: ['legacy'], category: 'news' },
          { key: `${app}-thread`, app, userIds: ['legacy'], category: 'other', objectId: 'thread:9' },
          { key: `${app}-free`, app, userIds: ['legacy'], category: 'other' },
        ]),
        NOW,
      );
      expect(Object.fromEntries([...targets].map(([k, v]) => [k, v.length]))).toEqual({
        'app-a-news': 0, 'app-a-thread': 0, 'app-a-free': 1, 'app-b-news': 0, 'app-b-thread': 0, 'app-b-free': 1,
      });
      // Still one every-app row per (user, category): opting out again changes nothing.
      expect(await db.preferences.setOptOut('legacy', 'news', true)).toBe(false);
    } finally {
      await old.close();
      await dropSchemaAndClose(db);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
