import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Registration } from '@herald/contracts';
import { createSpecDatabase, specMinute, specRegister, specUnregister, type SpecDatabase } from './spec-database.ts';
import { pruneDevices } from './device-prune.ts';
import { applyRegistrations } from './device-registration.ts';
import { eraseUser } from './user-erasure.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('device_signouts');
  await t.db.apps.upsert({ id: 'app-a' });
  await t.db.apps.upsert({ id: 'app-e' });
});
afterAll(() => t.drop());

let n = 0;
const nextToken = () => `tablet-${++n}-${Math.random().toString(36).slice(2)}`;
const at = specMinute;

const register = (token: string, minute: number, userId: string, app = 'app-a'): Registration => specRegister(token, minute, userId, { app });
const unregister = specUnregister;

const device = (token: string) => t.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirstOrThrow();
/** Each event in a call of its own, as registrar replicas or separate batches apply them. */
const oneByOne = async (events: readonly Registration[]) => {
  const results = [];
  for (const e of events) results.push(await t.db.devices.applyRegistration(e));
  return results;
};
/** Who of `users` a push reaches on `token` (findTargets, the demuxer's query). */
async function reached(token: string, users: readonly string[], app = 'app-a'): Promise<string[]> {
  const targets = await t.db.devices.findTargets([{ key: 'k', app, userIds: users, category: 'c' }], new Date());
  return (targets.get('k') ?? []).filter((d) => d.token === token).map((d) => d.userId).sort();
}
const signouts = (token: string) =>
  t.db.kysely.selectFrom('device_signouts').select(['user_id', 'signed_out_at']).where('token', '=', token).orderBy('user_id').execute();

describe("sign-outs that arrive before their sign-in (separate batches)", () => {
  it("a shared tablet: alice's sign-out before her sign-in ends her tombstone, the row her events in order make; neither she nor bob is reached", async () => {
    const tablet = nextToken();
    expect(await oneByOne([register(tablet, 1, 'bob'), unregister(tablet, 4, 'alice'), register(tablet, 3, 'alice')])).toEqual(['applied', 'stale', 'applied']);
    const inOrder = nextToken();
    await oneByOne([register(inOrder, 1, 'bob'), register(inOrder, 3, 'alice'), unregister(inOrder, 4, 'alice')]);
    const pick = ({ user_id, registered_at, last_event_at, invalidated_at, invalidation_reason }: Awaited<ReturnType<typeof device>>) => ({
      user_id,
      registered_at,
      last_event_at,
      invalidated_at,
      invalidation_reason,
    });
    expect(pick(await device(tablet))).toEqual(pick(await device(inOrder)));
    expect(await device(tablet)).toMatchObject({ user_id: 'alice', invalidation_reason: 'unregistered' });
    expect((await device(tablet)).invalidated_at?.toISOString()).toBe(at(4));
    expect(await reached(tablet, ['alice', 'bob'])).toEqual([]);
    // Delivered again, her sign-in stays her tombstone.
    expect(await t.db.devices.applyRegistration(register(tablet, 3, 'alice'))).toBe('stale');
    expect(await reached(tablet, ['alice', 'bob'])).toEqual([]);
  });

  it('every order of bob\'s sign-in, hers and her sign-out, one by one, ends a tombstone unregistered at her sign-out that reaches nobody', async () => {
    const events = (token: string) => [register(token, 1, 'bob'), register(token, 3, 'alice'), unregister(token, 4, 'alice')];
    const orders = [
      [0, 1, 2],
      [0, 2, 1],
      [1, 0, 2],
      [1, 2, 0],
      [2, 0, 1],
      [2, 1, 0],
    ];
    for (const order of orders) {
      const tablet = nextToken();
      const all = events(tablet);
      await oneByOne(order.map((i) => all[i] as Registration));
      const row = await device(tablet);
      expect({ order, reason: row.invalidation_reason, invalidated: row.invalidated_at?.toISOString(), last: row.last_event_at.toISOString() }).toEqual({
        order,
        reason: 'unregistered',
        invalidated: at(4),
        last: at(4),
      });
      expect(await reached(tablet, ['alice', 'bob'])).toEqual([]);
    }
  });

  it('a tombstone without a user (an unregister naming none): her sign-out before her sign-in leaves her not reached', async () => {
    const tablet = nextToken();
    await oneByOne([register(tablet, 1, 'bob'), unregister(tablet, 2)]);
    expect(await oneByOne([unregister(tablet, 4, 'alice'), register(tablet, 3, 'alice')])).toEqual(['stale', 'applied']);
    expect(await device(tablet)).toMatchObject({ user_id: 'alice', invalidation_reason: 'unregistered' });
    expect(await reached(tablet, ['alice', 'bob'])).toEqual([]);
  });

  it("three users: bob holds the tablet; carol's and alice's sign-outs come before their sign-ins: neither is reached", async () => {
    const tablet = nextToken();
    await t.db.devices.applyRegistration(register(tablet, 1, 'bob'));
    await oneByOne([unregister(tablet, 3, 'carol'), unregister(tablet, 6, 'alice')]);
    expect((await signouts(tablet)).map((s) => [s.user_id, s.signed_out_at.toISOString()])).toEqual([
      ['alice', at(6)],
      ['carol', at(3)],
    ]);
    await t.db.devices.applyRegistration(register(tablet, 2, 'carol'));
    expect(await reached(tablet, ['alice', 'bob', 'carol'])).toEqual([]);
    await t.db.devices.applyRegistration(register(tablet, 5, 'alice'));
    expect(await reached(tablet, ['alice', 'bob', 'carol'])).toEqual([]);
    expect(await device(tablet)).toMatchObject({ user_id: 'alice', invalidation_reason: 'unregistered' });
    expect((await device(tablet)).last_event_at.toISOString()).toBe(at(6));
  });

  // A phone a day ahead: kept as given, her sign-out turned each of her real sign-ins since into her
  // tombstone until real time passed it, where in order her later sign-in would have won.
  it("a sign-out from a clock running ahead does not hold back her sign-ins made since it was kept", async () => {
    const tablet = nextToken();
    const now = Date.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    await t.db.devices.applyRegistration({ ...register(tablet, 0, 'bob'), eventAt: iso(now - 60_000) });
    expect(await t.db.devices.applyRegistration({ ...unregister(tablet, 0, 'alice'), eventAt: iso(now + 86_400_000) })).toBe('stale');
    expect(await t.db.devices.applyRegistration({ ...register(tablet, 0, 'alice'), eventAt: iso(Date.now() + 1_000) })).toBe('applied');
    expect(await device(tablet)).toMatchObject({ user_id: 'alice', invalidated_at: null });
    expect(await reached(tablet, ['alice', 'bob'])).toEqual(['alice']);
    // A sign-in of hers stamped before the sign-out was kept is still turned into her tombstone.
    const other = nextToken();
    await t.db.devices.applyRegistration({ ...register(other, 0, 'bob'), eventAt: iso(now - 120_000) });
    await t.db.devices.applyRegistration({ ...unregister(other, 0, 'alice'), eventAt: iso(now + 86_400_000) });
    expect(await t.db.devices.applyRegistration({ ...register(other, 0, 'alice'), eventAt: iso(now - 60_000) })).toBe('applied');
    expect(await reached(other, ['alice', 'bob'])).toEqual([]);
  });

  it('a sign-in of hers after her sign-out still applies: the tablet is hers and live', async () => {
    const tablet = nextToken();
    await oneByOne([register(tablet, 1, 'bob'), unregister(tablet, 4, 'alice')]);
    expect(await t.db.devices.applyRegistration(register(tablet, 5, 'alice'))).toBe('applied');
    expect(await device(tablet)).toMatchObject({ user_id: 'alice', invalidated_at: null, invalidation_reason: null });
    expect(await reached(tablet, ['alice', 'bob'])).toEqual(['alice']);
    // Another user's sign-in before her sign-out is not touched by it.
    const other = nextToken();
    await oneByOne([register(other, 1, 'bob'), unregister(other, 4, 'alice'), register(other, 3, 'carol')]);
    expect(await reached(other, ['alice', 'bob', 'carol'])).toEqual(['carol']);
    // Her sign-in from before carol's is older than the device's last event: stale, as in order.
    expect(await t.db.devices.applyRegistration(register(other, 2, 'alice'))).toBe('stale');
    expect(await reached(other, ['alice', 'bob', 'carol'])).toEqual(['carol']);
  });

  it('a sign-in whose statement began before her sign-out was kept, written after it: the sign-out applies after it', async () => {
    const tablet = nextToken();
    await t.db.devices.applyRegistration(register(tablet, 1, 'bob'));
    let signOut: Promise<unknown> | undefined;
    let signIn: Promise<unknown> | undefined;
    const pause = () => new Promise((resolve) => setTimeout(resolve, 250));
    // Another writer holds the tablet's row: her sign-out queues for it, then her sign-in (its
    // snapshot taken now, before the sign-out is kept). Released, the sign-out finds it bob's.
    await t.db.kysely.transaction().execute(async (tx) => {
      await sql`select 1 from devices where token = ${tablet} for no key update`.execute(tx);
      signOut = t.db.devices.applyRegistration(unregister(tablet, 4, 'alice'));
      await pause();
      signIn = t.db.devices.applyRegistration(register(tablet, 3, 'alice'));
      await pause();
    });
    await Promise.all([signOut, signIn]);
    expect(await reached(tablet, ['alice', 'bob'])).toEqual([]);
    expect(await device(tablet)).toMatchObject({ user_id: 'alice', invalidation_reason: 'unregistered' });
  });

  it('a sign-in waiting for the row while her sign-out is kept reads it once it has the row', async () => {
    const tablet = nextToken();
    await t.db.devices.applyRegistration(register(tablet, 1, 'bob'));
    let signIn: Promise<unknown> | undefined;
    await t.db.kysely.transaction().execute(async (tx) => {
      await sql`select 1 from devices where token = ${tablet} for no key update`.execute(tx);
      // Her sign-in begins now (its statement's snapshot has no sign-out of hers) and waits for the row.
      signIn = t.db.devices.applyRegistration(register(tablet, 3, 'alice'));
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(await applyRegistrations(tx, [unregister(tablet, 4, 'alice')])).toEqual(['stale']);
    });
    expect(await signIn).toBe('applied');
    expect(await reached(tablet, ['alice', 'bob'])).toEqual([]);
    expect(await device(tablet)).toMatchObject({ user_id: 'alice', invalidation_reason: 'unregistered' });
  });

  it('the same events in one batch end as before: her tombstone', async () => {
    const tablet = nextToken();
    expect(await t.db.devices.applyRegistrations([register(tablet, 1, 'bob'), unregister(tablet, 4, 'alice'), register(tablet, 3, 'alice')])).toEqual([
      'applied',
      'applied',
      'applied',
    ]);
    expect(await device(tablet)).toMatchObject({ user_id: 'alice', invalidation_reason: 'unregistered' });
    expect(await signouts(tablet)).toEqual([]);
  });

  it("erasing the user deletes her kept sign-outs of the app's devices (others' stay); a late one from before the erasure is not kept", async () => {
    const tablet = nextToken();
    await oneByOne([register(tablet, 1, 'bob', 'app-e'), unregister(tablet, 4, 'erin', 'app-e'), unregister(tablet, 5, 'frank', 'app-e')]);
    expect((await signouts(tablet)).map((s) => s.user_id)).toEqual(['erin', 'frank']);
    await eraseUser(t.db.kysely, 'app-e', 'erin');
    expect((await signouts(tablet)).map((s) => s.user_id)).toEqual(['frank']);
    expect(await t.db.devices.applyRegistration(unregister(tablet, 6, 'erin', 'app-e'))).toBe('stale');
    expect((await signouts(tablet)).map((s) => s.user_id)).toEqual(['frank']);
  });
});

describe('pruning kept sign-outs', () => {
  it("deletes a pruned device's sign-outs, and sign-outs older than the retention; keeps recent ones", async () => {
    const recent = new Date(Date.now() - 3_600_000).toISOString();
    const dead = nextToken();
    const kept = nextToken();
    const old = nextToken();
    // The dead device's sign-out is recent: it goes with the device, not for its age.
    await oneByOne([register(dead, 1, 'bob'), { ...unregister(dead, 0, 'alice'), eventAt: recent }, register(old, 1, 'bob'), unregister(old, 4, 'alice')]);
    expect((await signouts(dead)).map((s) => s.user_id)).toEqual(['alice']);
    await t.db.devices.applyRegistration({ ...register(kept, 1, 'bob'), eventAt: new Date(Date.now() - 7_200_000).toISOString() });
    await t.db.devices.applyRegistration({ ...unregister(kept, 0, 'alice'), eventAt: recent });
    await t.db.devices.invalidate({ app: 'app-a', platform: 'apns', token: dead, reason: 'Unregistered', invalidSince: new Date(at(5)), observedAt: new Date() });
    await sql`update devices set updated_at = ${at(6)}::timestamptz where token = ${dead}`.execute(t.db.kysely);
    expect(await pruneDevices(t.db.kysely, new Date(Date.now() - 86_400_000))).toBe(1);
    expect(await signouts(dead)).toEqual([]);
    expect(await signouts(old)).toEqual([]);
    expect((await signouts(kept)).map((s) => s.user_id)).toEqual(['alice']);
  });
});

describe('a sign-out of a token a provider declared dead', () => {
  it("keeps the provider's reason and time, so the dead device is still listed as such and pruned after the retention", async () => {
    const token = nextToken();
    await t.db.devices.applyRegistration(register(token, 1, 'dora'));
    await t.db.devices.invalidate({ app: 'app-a', platform: 'apns', token, reason: 'Unregistered', invalidSince: new Date(at(2)), observedAt: new Date() });
    expect(await t.db.devices.applyRegistration(unregister(token, 3, 'dora'))).toBe('applied');
    const row = await device(token);
    expect(row).toMatchObject({ user_id: 'dora', invalidation_reason: 'Unregistered' });
    expect(row.invalidated_at?.toISOString()).toBe(at(2));
    expect(row.last_event_at.toISOString()).toBe(at(3));
    // Past the retention (here: everything before a minute from now), it goes.
    expect(await pruneDevices(t.db.kysely, new Date(Date.now() + 60_000))).toBeGreaterThanOrEqual(1);
    expect(await t.db.kysely.selectFrom('devices').select('id').where('token', '=', token).executeTakeFirst()).toBeUndefined();
  });
});
