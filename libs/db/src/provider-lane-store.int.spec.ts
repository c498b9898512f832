import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from './database.ts';
import { createProviderLaneStore, LANE_STALE_MS, readDownLanes } from './provider-lane-store.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

let s: SpecDatabase;
beforeAll(async () => {
  s = await createSpecDatabase('lanes');
});
afterAll(() => s.drop());

const age = (instance: string, interval: string) =>
  s.db.kysely.updateTable('provider_lanes').set({ seen_at: sql<Date>`clock_timestamp() - ${interval}::interval` }).where('instance', '=', instance).execute();

describe('the provider lanes the pushers take to be down', () => {
  it("keeps each pusher's lanes down as it last said, by PostgreSQL's clock, and leaves out a pusher's rows once it no longer writes them", async () => {
    const p1 = createProviderLaneStore(s.db.kysely, { instance: 'apns-pusher@a:1', platform: 'apns' });
    const p2 = createProviderLaneStore(s.db.kysely, { instance: 'apns-pusher@b:2', platform: 'apns' });
    await p1.record([{ lane: 'apns (shared connection)', downForMs: 120_000 }, { lane: 'connection of shop', downForMs: 10_000 }]);
    await p2.record([{ lane: 'apns (shared connection)', downForMs: 30_000 }]);
    const read = await readDownLanes(s.db.kysely);
    expect(read?.map((r) => [r.instance, r.lane])).toEqual([
      ['apns-pusher@a:1', 'apns (shared connection)'],
      ['apns-pusher@b:2', 'apns (shared connection)'],
      ['apns-pusher@a:1', 'connection of shop'],
    ]);
    expect(read?.[0]?.downForMs).toBeGreaterThanOrEqual(120_000);
    expect(read?.[0]?.downForMs).toBeLessThan(125_000);

    // p1's shop lane answered: written with what is still down, its row goes.
    await p1.record([{ lane: 'apns (shared connection)', downForMs: 150_000 }]);
    expect((await readDownLanes(s.db.kysely))?.map((r) => [r.instance, r.lane])).toEqual([
      ['apns-pusher@a:1', 'apns (shared connection)'],
      ['apns-pusher@b:2', 'apns (shared connection)'],
    ]);
    // p2 died: its row, no longer written, says nothing once stale.
    await age('apns-pusher@b:2', `${LANE_STALE_MS + 1_000} milliseconds`);
    expect((await readDownLanes(s.db.kysely))?.map((r) => r.instance)).toEqual(['apns-pusher@a:1']);
    // Every lane of p1 up again: none left.
    await p1.record([]);
    expect(await readDownLanes(s.db.kysely)).toEqual([]);
  });

  it("deletes rows a day stale at any pusher's write, and not a fresher dead pusher's", async () => {
    const gone = createProviderLaneStore(s.db.kysely, { instance: 'fcm-pusher@gone:1', platform: 'fcm' });
    const recent = createProviderLaneStore(s.db.kysely, { instance: 'fcm-pusher@recent:2', platform: 'fcm' });
    await gone.record([{ lane: 'fcm (shared connection)', downForMs: 1_000 }]);
    await recent.record([{ lane: 'fcm (shared connection)', downForMs: 1_000 }]);
    await age('fcm-pusher@gone:1', '25 hours');
    await age('fcm-pusher@recent:2', '2 hours');
    await createProviderLaneStore(s.db.kysely, { instance: 'web-pusher@c:3', platform: 'web' }).record([]);
    const left = await s.db.kysely.selectFrom('provider_lanes').select('instance').where('platform', '=', 'fcm').orderBy('instance').execute();
    expect(left.map((r) => r.instance)).toEqual(['fcm-pusher@recent:2']);
  });

  // A monitor rolled before `prepare`: the table's absence blinds provider-down alone, not the
  // other reads it makes with it (scheduled-overdue, the certificates), nor says PostgreSQL is away.
  it('reads undefined from a schema without provider_lanes (migration 0043 not applied), and throws what else stops the read', async () => {
    const rollback = new Error('roll back');
    let read: unknown = 'not read';
    await s.db.kysely
      .transaction()
      .execute(async (trx) => {
        await sql`drop table provider_lanes`.execute(trx);
        read = await readDownLanes(trx);
        throw rollback;
      })
      .catch((err: unknown) => {
        if (err !== rollback) throw err;
      });
    expect(read).toBeUndefined();
    // Still there outside the rolled back transaction.
    expect(await readDownLanes(s.db.kysely)).toEqual([]);
    // A database that does not answer is not a missing table: the reader's database-unreachable.
    const away = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/test', schema: s.schema, poolSize: 1 });
    try {
      await expect(readDownLanes(away.kysely)).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await away.close();
    }
  });
});
