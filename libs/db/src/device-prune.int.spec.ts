import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { pruneDevices } from './device-prune.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('device_prune');
  await t.db.apps.upsert({ id: 'demo' });
});
afterAll(() => t.drop());

const DAY = 86_400_000;
const daysAgo = (d: number) => new Date(Date.now() - d * DAY);
let n = 0;
const nextToken = () => (++n).toString(16).padStart(64, 'a');

type State = 'live' | 'unregistered' | 'invalidated';

/** A device in `state` whose every kept time is `age` days ago; returns its id. */
async function device(state: State, age: number): Promise<string> {
  const token = nextToken();
  const at = daysAgo(age + 1).toISOString();
  if (state === 'unregistered') {
    // An unregister of a token never registered: the tombstone (no user).
    await t.db.devices.applyRegistration({ version: 1, kind: 'unregister', app: 'demo', platform: 'apns', token, eventAt: at });
  } else {
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'demo', platform: 'apns', token, userId: 'u', eventAt: at });
    if (state === 'invalidated') await t.db.devices.invalidate({ app: 'demo', platform: 'apns', token, reason: 'Unregistered', invalidSince: new Date(at), observedAt: new Date() });
  }
  const when = daysAgo(age).toISOString();
  const { rows } = await sql<{ id: string }>`
    update devices set updated_at = ${when}::timestamptz, event_applied_at = ${when}::timestamptz, last_event_at = ${at}::timestamptz,
      invalidated_at = case when invalidated_at is not null then ${at}::timestamptz end
    where token = ${token} returning id::text as id`.execute(t.db.kysely);
  return (rows[0] as { id: string }).id;
}
const exists = async (id: string) => (await sql`select 1 from devices where id = ${id}::bigint`.execute(t.db.kysely)).rows.length === 1;

describe('pruning dead devices past their retention', () => {
  it('deletes old tokens a provider declared dead; keeps recent ones, live devices, and every tombstone an unregister left', async () => {
    const old = await Promise.all([device('invalidated', 100), device('invalidated', 91), device('invalidated', 300)]);
    const recent = await device('invalidated', 30);
    const live = await device('live', 400);
    // A logout's tombstone, however old: the phone's token still works, and the pusher drops a push
    // queued before the logout only while the row is there.
    const tombstones = await Promise.all([device('unregistered', 120), device('unregistered', 400)]);
    // Changed long ago, but its last event was stamped by a clock running far ahead, or a fast clock's mark is recent.
    const ahead = await device('invalidated', 150);
    await sql`update devices set last_event_at = now() + interval '10 days' where id = ${ahead}::bigint`.execute(t.db.kysely);
    const marked = await device('invalidated', 150);
    await sql`update devices set event_ahead_mark = now() - interval '10 days' where id = ${marked}::bigint`.execute(t.db.kysely);

    expect(await pruneDevices(t.db.kysely, daysAgo(90), 2)).toBe(old.length);
    for (const id of old) expect(await exists(id)).toBe(false);
    for (const id of [recent, live, ...tombstones, ahead, marked]) expect(await exists(id)).toBe(true);
    expect(await pruneDevices(t.db.kysely, daysAgo(90))).toBe(0);
  });

  it('skips a row another transaction holds, and takes it at the next prune', async () => {
    const held = await device('invalidated', 100);
    await t.db.kysely.transaction().execute(async (trx) => {
      await sql`select 1 from devices where id = ${held}::bigint for update`.execute(trx);
      expect(await pruneDevices(t.db.kysely, daysAgo(90))).toBe(0);
    });
    expect(await pruneDevices(t.db.kysely, daysAgo(90))).toBe(1);
    expect(await exists(held)).toBe(false);
  });
});
