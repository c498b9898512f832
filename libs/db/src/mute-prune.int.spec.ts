import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { pruneExpiredMutes } from './mute-prune.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('mute_prune');
  await t.db.apps.upsert({ id: 'demo' });
});
afterAll(() => t.drop());

const HOUR = 3_600_000;
const fromNow = (ms: number) => new Date(Date.now() + ms);
const mutes = async (user: string) =>
  (await t.db.kysely.selectFrom('mutes').select('object_id').where('user_id', '=', user).orderBy('object_id').execute()).map((m) => m.object_id);

describe('pruning expired mutes', () => {
  it('deletes mutes whose time has passed, in batches; keeps active ones and those until removed', async () => {
    // Before, nothing deleted an expired mute (only clearing one did): the table only grew.
    const user = 'u-prune';
    for (const [object, until] of [
      ['expired-1', fromNow(-HOUR)],
      ['expired-2', fromNow(-48 * HOUR)],
      ['expired-3', fromNow(-1_000)],
      ['active', fromNow(HOUR)],
      ['forever', null],
    ] as const) {
      await t.db.preferences.setMute(user, object, until, 'demo');
    }
    await t.db.preferences.setMute(user, 'expired-every-app', fromNow(-HOUR));
    expect(await pruneExpiredMutes(t.db.kysely, new Date(), 2)).toBe(4);
    expect(await mutes(user)).toEqual(['active', 'forever']);
    expect(await pruneExpiredMutes(t.db.kysely, new Date())).toBe(0);
  });

  it('never deletes a mute the database does not yet see as expired, whatever time it is asked for', async () => {
    const user = 'u-clock';
    await t.db.preferences.setMute(user, 'soon', fromNow(HOUR), 'demo');
    expect(await pruneExpiredMutes(t.db.kysely, fromNow(2 * HOUR))).toBe(0);
    expect(await mutes(user)).toEqual(['soon']);
  });

  it('skips a mute another transaction holds, and takes it at the next prune', async () => {
    const user = 'u-held';
    await t.db.preferences.setMute(user, 'held', fromNow(-HOUR), 'demo');
    await t.db.kysely.transaction().execute(async (trx) => {
      await sql`select 1 from mutes where user_id = ${user} for update`.execute(trx);
      expect(await pruneExpiredMutes(t.db.kysely, new Date())).toBe(0);
    });
    expect(await pruneExpiredMutes(t.db.kysely, new Date())).toBe(1);
    expect(await mutes(user)).toEqual([]);
  });
});
