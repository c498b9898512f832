import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { DEVICE_PRUNE_LOCK_CLASS, pruneDevices, pruneDevicesExclusively } from './device-prune.ts';

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
const scheduleFor = (deviceId: string) =>
  sql`insert into scheduled_pushes (platform, due_at, job_id, push_id, payload) values ('apns', now() + interval '30 days', 'job', ${randomUUID()}::uuid, ${JSON.stringify({ deviceId })}::json)`.execute(t.db.kysely);

describe('pruning dead devices past their retention', () => {
  it('deletes old invalidated tokens and tombstones; keeps recent ones, live devices, and dead ones a stored push still names', async () => {
    const old = await Promise.all([device('invalidated', 100), device('unregistered', 120), device('invalidated', 91), device('unregistered', 200), device('invalidated', 300)]);
    const recent = await Promise.all([device('invalidated', 30), device('unregistered', 80)]);
    const live = await device('live', 400);
    // A push stored for next month names it: the pusher drops that push only while the dead row is there.
    const named = await device('unregistered', 150);
    await scheduleFor(named);
    // Changed long ago, but its last event was stamped by a clock running far ahead: a register stamped
    // before that time is stale against it, and is not yet older than the retention.
    const ahead = await device('unregistered', 150);
    await sql`update devices set last_event_at = now() + interval '10 days' where id = ${ahead}::bigint`.execute(t.db.kysely);
    const marked = await device('invalidated', 150);
    await sql`update devices set event_ahead_mark = now() - interval '10 days' where id = ${marked}::bigint`.execute(t.db.kysely);

    expect(await pruneDevices(t.db.kysely, daysAgo(90), 2)).toBe(old.length);
    for (const id of old) expect(await exists(id)).toBe(false);
    for (const id of [...recent, live, named, ahead, marked]) expect(await exists(id)).toBe(true);
    expect(await pruneDevices(t.db.kysely, daysAgo(90))).toBe(0);

    // Once the push has gone (sent, or dropped at send), the row goes at the next prune.
    await sql`delete from scheduled_pushes`.execute(t.db.kysely);
    expect(await pruneDevices(t.db.kysely, daysAgo(90))).toBe(1);
    expect(await exists(named)).toBe(false);
  });

  it('skips a row another transaction holds, and takes it at the next prune', async () => {
    const held = await device('unregistered', 100);
    await t.db.kysely.transaction().execute(async (trx) => {
      await sql`select 1 from devices where id = ${held}::bigint for update`.execute(trx);
      expect(await pruneDevices(t.db.kysely, daysAgo(90))).toBe(0);
    });
    expect(await pruneDevices(t.db.kysely, daysAgo(90))).toBe(1);
    expect(await exists(held)).toBe(false);
  });

  it('one process at a time: while another session holds the lock, a prune touches nothing', async () => {
    const id = await device('invalidated', 100);
    await t.db.kysely.connection().execute(async (conn) => {
      await sql`select pg_advisory_lock(${DEVICE_PRUNE_LOCK_CLASS}::int, hashtext(current_schema()))`.execute(conn);
      try {
        expect(await pruneDevicesExclusively(t.db.kysely, daysAgo(90))).toBeUndefined();
        expect(await exists(id)).toBe(true);
      } finally {
        await sql`select pg_advisory_unlock(${DEVICE_PRUNE_LOCK_CLASS}::int, hashtext(current_schema()))`.execute(conn);
      }
    });
    expect(await pruneDevicesExclusively(t.db.kysely, daysAgo(90))).toBe(1);
    expect(await exists(id)).toBe(false);
  });
});
