import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { matchKey } from './subscription-repository.ts';

describe('subscription repository', () => {
  let t: SpecDatabase;
  beforeAll(async () => {
    t = await createSpecDatabase('subs');
  });
  afterAll(async () => {
    await t?.drop();
  });

  const sub = (team: string, resourceId: string, resourceType = 'campaign') => ({
    team,
    callbackUrl: 'https://hooks.example.com/h',
    resourceType,
    resourceId,
    secret: 'a-secret-of-16-chars-or-more',
  });

  it('matches exact ids and wildcards of the type, enabled only; teams see only their own', async () => {
    const s = t.db.subscriptions;
    const exact = await s.create(sub('a', 'c1'));
    const wildcard = await s.create(sub('b', '*'));
    const other = await s.create(sub('a', 'c2'));
    const otherType = await s.create(sub('a', 'c1', 'ad'));
    const disabled = await s.create(sub('a', 'c1'));
    expect(await s.disable(disabled.id, 'test')).toBe(true);
    expect(await s.disable(disabled.id, 'again')).toBe(false);
    const found = await s.findMatching([{ type: 'campaign', id: 'c1' }, { type: 'campaign', id: 'c9' }]);
    expect(found.get(matchKey('campaign', 'c1'))?.map((r) => r.id).sort()).toEqual([exact.id, wildcard.id].sort());
    expect(found.get(matchKey('campaign', 'c9'))?.map((r) => r.id)).toEqual([wildcard.id]);
    expect((await s.listForTeam('a')).map((r) => r.id)).toEqual(expect.arrayContaining([exact.id, other.id, otherType.id, disabled.id]));
    expect(await s.getForTeam('b', exact.id)).toBeUndefined();
    expect(await s.deleteForTeam('b', exact.id)).toBe(false);
    expect(await s.deleteForTeam('a', other.id)).toBe(true);
    expect((await s.enableForTeam('a', disabled.id))?.enabled).toBe(true);
  });

  it('keeps the first failure time until a success clears it', async () => {
    const s = t.db.subscriptions;
    const row = await s.create(sub('a', 'c3'));
    const first = new Date('2026-01-01T00:00:00Z');
    expect(await s.noteFailure(row.id, first)).toEqual(first);
    expect(await s.noteFailure(row.id, new Date('2026-01-01T00:05:00Z'))).toEqual(first);
    await s.noteSuccess([row.id]);
    expect((await s.getMany([row.id])).get(row.id)?.failingSince).toBeNull();
  });

  it("accepts the 'webhook' rate-limit channel", async () => {
    await t.db.rateLimits.set({ platform: 'webhook', app: 'hooks.example.com:443' }, 10);
    expect((await t.db.rateLimits.list()).some((r) => r.platform === 'webhook')).toBe(true);
  });
});
