import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MIGRATIONS_DIR } from './migrations.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

/** Migration 0015 on rows written before registrations checked and normalised tokens. */
let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('token_format');
  await t.db.apps.upsert({ id: 'chat' });
});
afterAll(async () => {
  await t.drop();
});

const HEX = 'ab'.repeat(32);
const row = (platform: 'apns' | 'fcm', token: string, userId: string, lastEventAt: string) => ({
  app: 'chat', platform, token, user_id: userId, registered_at: new Date(lastEventAt), last_event_at: new Date(lastEventAt),
});

describe('migration 0015: legacy device tokens', () => {
  it('merges an upper-case APNs token with its lower-case twin (latest event wins), lowers the rest, invalidates tokens no provider accepts', async () => {
    await t.db.kysely.insertInto('devices').values([
      row('apns', HEX.toUpperCase(), 'old-owner', '2025-01-01T00:00:00Z'),
      row('apns', HEX, 'new-owner', '2025-02-01T00:00:00Z'),
      row('apns', 'CD'.repeat(32), 'upper-only', '2025-01-01T00:00:00Z'),
      row('fcm', 'my-fcm-token', 'legacy-fcm', '2025-01-01T00:00:00Z'),
      row('apns', 'not a token', 'legacy-apns', '2025-01-01T00:00:00Z'),
      row('fcm', `ok:APA91b${'x'.repeat(60)}`, 'good-fcm', '2025-01-01T00:00:00Z'),
    ]).execute();
    const text = await readFile(join(DEFAULT_MIGRATIONS_DIR, '0015_device_token_format.sql'), 'utf8');
    await sql.raw(text).execute(t.db.kysely);
    const rows = await t.db.kysely.selectFrom('devices').select(['token', 'user_id', 'invalidation_reason']).orderBy('user_id').execute();
    expect(rows).toEqual([
      { token: `ok:APA91b${'x'.repeat(60)}`, user_id: 'good-fcm', invalidation_reason: null },
      { token: 'not a token', user_id: 'legacy-apns', invalidation_reason: 'invalid-format' },
      { token: 'my-fcm-token', user_id: 'legacy-fcm', invalidation_reason: 'invalid-format' },
      { token: HEX, user_id: 'new-owner', invalidation_reason: null },
      { token: 'cd'.repeat(32), user_id: 'upper-only', invalidation_reason: null },
    ]);
  });
});
