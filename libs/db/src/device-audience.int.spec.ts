import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Registration } from '@herald/contracts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

const NOW = new Date('2025-06-01T12:00:00Z');
let t: SpecDatabase;

const register = (userId: string, token: string): Registration => ({
  version: 1,
  kind: 'register',
  app: 'aud',
  platform: 'fcm',
  token,
  userId,
  eventAt: '2025-01-01T00:00:00Z',
});

beforeAll(async () => {
  t = await createSpecDatabase('audience');
  await t.db.apps.upsert({ id: 'aud' });
  await t.db.devices.applyRegistrations([
    register('plain', 'p1'),
    register('plain', 'p2'),
    register('opted', 'o1'),
    register('muted', 'm1'),
    register('was-muted', 'w1'),
    register('both', 'b1'),
  ]);
  await t.db.kysely
    .insertInto('opt_outs')
    .values([
      { user_id: 'opted', category: 'news' },
      { user_id: 'both', category: 'news' },
    ])
    .execute();
  await t.db.kysely
    .insertInto('mutes')
    .values([
      { user_id: 'muted', object_id: 'thread:1', until: null },
      { user_id: 'both', object_id: 'thread:1', until: null },
      { user_id: 'was-muted', object_id: 'thread:1', until: new Date(NOW.getTime() - 1) },
    ])
    .execute();
});
afterAll(() => t.drop());

describe('DeviceRepository.findAudience', () => {
  it("returns every active device of the job's users with why it is skipped, in the one targeting query", async () => {
    const users = ['plain', 'opted', 'muted', 'was-muted', 'both', 'nobody'];
    const audience = await t.db.devices.findAudience(
      [{ key: 'k', app: 'aud', userIds: users, category: 'news', objectId: 'thread:1' }],
      NOW,
    );
    const byToken = Object.fromEntries((audience.get('k') ?? []).map((d) => [d.token, d.skipped]));
    // An opt-out outranks a mute; a mute that ran out skips nothing; a user without devices has no rows.
    expect(byToken).toEqual({ p1: null, p2: null, o1: 'opted-out', m1: 'muted', w1: null, b1: 'opted-out' });
    const targets = await t.db.devices.findTargets(
      [{ key: 'k', app: 'aud', userIds: users, category: 'news', objectId: 'thread:1' }],
      NOW,
    );
    expect((targets.get('k') ?? []).map((d) => d.token).sort()).toEqual(['p1', 'p2', 'w1']);
    expect(targets.get('k')?.[0]).not.toHaveProperty('skipped');
  });
});
