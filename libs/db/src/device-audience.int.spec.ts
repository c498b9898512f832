import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Registration } from '@herald/contracts';
import { waitFor } from '@herald/testing';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { applyTopicMemberships, createTopic } from './topic-store.ts';

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

describe("findAudience, a retry's read of a phone whose token was replaced as the job's first fan-out read it", () => {
  const rotate = (userId: string, from: string, to: string) =>
    t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'aud', platform: 'fcm', token: to, previousToken: from, userId, eventAt: new Date().toISOString() });
  const request = (userId: string, jobId?: string) => ({ key: 'k', app: 'aud', userIds: [userId], category: 'news', ...(jobId !== undefined && { jobId }) });
  /** The tokens a retry of `jobId` addresses the user's phone by (not those it counts as dead since: `gone`). */
  const retryTokens = async (userId: string, jobId: string) =>
    ((await t.db.devices.findAudience([request(userId, jobId)], new Date())).get('k') ?? []).filter((d) => d.gone !== true).map((d) => d.token);

  it('a rotation that wrote its link before the read and committed after it (waiting for a topic): the old token, as the read found it', async () => {
    const [user, job, topic] = [`held-${randomUUID()}`, randomUUID(), `held-${randomUUID()}`];
    await t.db.devices.applyRegistration(register(user, `${user}-old`));
    await createTopic(t.db.kysely, 'aud', topic);
    await applyTopicMemberships(t.db.kysely, [{ app: 'aud', topic, member: { platform: 'fcm', token: `${user}-old` }, subscribed: true, eventAt: new Date().toISOString() }]);
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let locked = (): void => undefined;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    // A membership batch holding the topic: the rotation writes its link, then waits to copy the membership.
    const holder = t.db.kysely.transaction().execute(async (trx) => {
      await sql`select 1 from topics where app = 'aud' and name = ${topic} for no key update`.execute(trx);
      locked();
      await gate;
    });
    await isLocked;
    const rotation = rotate(user, `${user}-old`, `${user}-new`);
    await waitFor('the rotation waiting for the topic', async () =>
      (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%previous_token%'`.execute(t.db.kysely)).rows[0]?.n ? true : undefined,
    );
    const read = await t.db.devices.findAudience([request(user)], new Date());
    expect((read.get('k') ?? []).map((d) => d.token)).toEqual([`${user}-old`]);
    await t.db.jobs.recordDemux([{ id: job, app: 'aud', targeted: 1, outcome: 'fanned-out', readAs: read.readAs?.get('k') ?? expect.fail('no snapshot read') }]);
    release();
    await holder;
    await rotation;
    expect(await retryTokens(user, job)).toEqual([`${user}-old`]);
  });

  it("answers one snapshot for every request of the read, those without a device too", async () => {
    const read = await t.db.devices.findAudience([{ ...request('plain'), key: 'a' }, { ...request(`nobody-${randomUUID()}`), key: 'b' }], new Date());
    expect(read.get('b')).toEqual([]);
    expect(read.readAs?.get('a')).toMatch(/^\d+:\d+:/);
    expect(read.readAs?.get('b')).toBe(read.readAs?.get('a'));
  });

  it('a rotation committed before the read: the new token, as the read found it; a job recorded without the read\'s snapshot (before migration 0047) compares the times', async () => {
    const [user, job, unstamped] = [`before-${randomUUID()}`, randomUUID(), randomUUID()];
    await t.db.devices.applyRegistration(register(user, `${user}-old`));
    await rotate(user, `${user}-old`, `${user}-new`);
    const read = await t.db.devices.findAudience([request(user)], new Date());
    expect((read.get('k') ?? []).map((d) => d.token)).toEqual([`${user}-new`]);
    await t.db.jobs.recordDemux([{ id: job, app: 'aud', targeted: 1, outcome: 'fanned-out', readAs: read.readAs?.get('k') ?? expect.fail('no snapshot read') }]);
    expect(await retryTokens(user, job)).toEqual([`${user}-new`]);
    // Recorded without a snapshot, after the rotation: the link's time is before the record's.
    await t.db.jobs.recordDemux([{ id: unstamped, app: 'aud', targeted: 1, outcome: 'fanned-out' }]);
    expect(await retryTokens(user, unstamped)).toEqual([`${user}-new`]);
  });
});
