import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

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
    const found = await s.findMatching([{ type: 'campaign', id: 'c1' }, { type: 'campaign', id: 'c9' }], { limit: 100 });
    expect(found.map((r) => r.id)).toEqual([exact.id, wildcard.id].sort());
    expect((await s.findMatching([{ type: 'campaign', id: 'c9' }], { limit: 100 })).map((r) => r.id)).toEqual([wildcard.id]);
    // A type of one resource with the id of another matches nothing: c2 is a campaign, not an ad.
    expect(await s.findMatching([{ type: 'ad', id: 'c2' }, { type: 'campaign', id: 'c9' }], { limit: 100 })).toEqual([expect.objectContaining({ id: wildcard.id })]);
    expect((await s.listForTeam('a', { limit: 100 })).map((r) => r.id)).toEqual(expect.arrayContaining([exact.id, other.id, otherType.id, disabled.id]));
    expect(await s.getForTeam('b', exact.id)).toBeUndefined();
    expect(await s.deleteForTeam('b', exact.id)).toBe(false);
    expect(await s.deleteForTeam('a', other.id)).toBe(true);
    expect((await s.enableForTeam('a', disabled.id))?.enabled).toBe(true);
  });

  it('disables a failing subscription only while it is failing since the time noted: one an operator enabled meanwhile, or one a delivery succeeded for, stays enabled', async () => {
    const s = t.db.subscriptions;
    const failing = await s.create(sub('a', 'f1'));
    const since = await s.noteFailure(failing.id, new Date('2026-01-01T00:00:00Z'));
    if (since === undefined) throw new Error('no failure noted');
    await s.noteSuccess([failing.id]);
    expect(await s.disable(failing.id, 'endpoint failing', since)).toBe(false);
    const again = await s.noteFailure(failing.id, new Date('2026-01-02T00:00:00Z'));
    expect(await s.disable(failing.id, 'endpoint failing', again)).toBe(true);
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

  it('creates within the per-team cap, also under concurrent creates; other teams are not counted', async () => {
    const s = t.db.subscriptions;
    const made = await Promise.all(Array.from({ length: 8 }, (_, i) => s.createWithin(sub('capped', `x${i}`), 5)));
    expect(made.filter((m) => m === 'team-limit')).toHaveLength(3);
    expect(await s.listForTeam('capped', { limit: 100 })).toHaveLength(5);
    expect(await s.createWithin(sub('capped', 'y'), 5)).toBe('team-limit');
    expect(await s.createWithin(sub('capped-too', 'y'), 5)).toMatchObject({ team: 'capped-too' });
  });

  it('pages a team list and the matches of a change by id', async () => {
    const s = t.db.subscriptions;
    const ids = (await Promise.all(Array.from({ length: 5 }, (_, i) => s.create(sub('paged', i % 2 === 0 ? '*' : 'p1', 'ad'))))).map((r) => r.id).sort();
    const first = await s.listForTeam('paged', { limit: 2 });
    const second = await s.listForTeam('paged', { limit: 2, after: first[1]?.id ?? '' });
    const third = await s.listForTeam('paged', { limit: 2, after: second[1]?.id ?? '' });
    expect([...first, ...second, ...third].map((r) => r.id)).toEqual(ids);
    const resources = [{ type: 'ad', id: 'p1' }];
    const m1 = await s.findMatching(resources, { limit: 3 });
    const m2 = await s.findMatching(resources, { limit: 3, after: m1[2]?.id ?? '' });
    expect([...m1, ...m2].map((r) => r.id)).toEqual(ids);
  });
});
