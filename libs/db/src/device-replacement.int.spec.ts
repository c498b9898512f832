import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Registration } from '@herald/contracts';
import { createSpecDatabase, specMinute, specRegister, specUnregister, type SpecDatabase } from './spec-database.ts';
import { eraseUser } from './user-erasure.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('device_replaced');
  await t.db.apps.upsert({ id: 'app-a' });
});
afterAll(() => t.drop());

let n = 0;
const nextToken = () => `tok-${++n}-${Math.random().toString(36).slice(2)}`;
const at = specMinute;
const register = specRegister;
const unregister = (token: string, minute: number, userId?: string): Registration => specUnregister(token, minute, userId);
const apply = (reg: Registration) => t.db.devices.applyRegistration(reg);
const oneByOne = async (events: readonly Registration[]) => {
  for (const e of events) await apply(e);
};
const device = (token: string) =>
  t.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirstOrThrow();
/** What a rotation may change on the old row, and whether it is live. */
const state = async (token: string) => {
  const d = await device(token);
  return {
    user_id: d.user_id,
    invalidated_at: d.invalidated_at?.toISOString() ?? null,
    invalidation_reason: d.invalidation_reason,
    replaced_by: d.replaced_by,
    last_event_at: d.last_event_at.toISOString(),
  };
};
const live = (userId: string | null, minute: number) => ({
  user_id: userId,
  invalidated_at: null,
  invalidation_reason: null,
  replaced_by: null,
  last_event_at: at(minute),
});
const idOf = async (token: string) => (await device(token)).id;

describe('a register naming its previousToken (token rotation)', () => {
  it("invalidates the old token's device as 'replaced' at the rotation's time and links it to the new device; its last event stays", async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    expect(await apply(register(fresh, 5, 'alice', { previousToken: old }))).toBe('applied');
    expect(await state(old)).toEqual({
      user_id: 'alice',
      invalidated_at: at(5),
      invalidation_reason: 'replaced',
      replaced_by: await idOf(fresh),
      last_event_at: at(1),
    });
    expect(await state(fresh)).toEqual(live('alice', 5));
    // A fan-out now reaches the new token only.
    const targets =
      (await t.db.devices.findTargets([{ key: 'k', app: 'app-a', userIds: ['alice'], category: 'c' }], new Date())).get('k') ??
      [];
    expect(targets.map((d) => d.token).filter((tok) => tok === old || tok === fresh)).toEqual([fresh]);
  });

  it("leaves the old token alone when it is another user's now, a tombstone, or signed out of ('unregistered': its pushes stay dead)", async () => {
    const [bobs, tombstone, signedOut] = [nextToken(), nextToken(), nextToken()];
    await oneByOne([
      register(bobs, 1, 'bob'),
      unregister(tombstone, 1),
      register(signedOut, 1, 'alice'),
      unregister(signedOut, 2, 'alice'),
    ]);
    const before = await Promise.all([bobs, tombstone, signedOut].map(state));
    for (const old of [bobs, tombstone, signedOut]) {
      const fresh = nextToken();
      expect(await apply(register(fresh, 5, 'alice', { previousToken: old }))).toBe('applied');
      expect(await state(fresh)).toEqual(live('alice', 5));
    }
    expect(await Promise.all([bobs, tombstone, signedOut].map(state))).toEqual(before);
    expect(before[0]).toEqual(live('bob', 1));
    expect(before[2]).toMatchObject({ user_id: 'alice', invalidation_reason: 'unregistered' });
  });

  it("an old token a provider declared dead first keeps the provider's time and reason, and is linked", async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    expect(
      await t.db.devices.invalidate({
        app: 'app-a',
        platform: 'apns',
        token: old,
        reason: 'Unregistered',
        invalidSince: new Date(at(3)),
        observedAt: new Date(at(4)),
      }),
    ).toBe('invalidated');
    await apply(register(fresh, 5, 'alice', { previousToken: old }));
    expect(await state(old)).toEqual({
      user_id: 'alice',
      invalidated_at: at(3),
      invalidation_reason: 'Unregistered',
      replaced_by: await idOf(fresh),
      last_event_at: at(1),
    });
  });

  it('does not link tokens of another kind (a VoIP token is not replaced by a device token)', async () => {
    const [voip, fresh] = [nextToken(), nextToken()];
    await apply(register(voip, 1, 'alice', { tokenKind: 'voip' }));
    await apply(register(fresh, 5, 'alice', { previousToken: voip }));
    expect(await state(voip)).toEqual(live('alice', 1));
    // The same kind links.
    const voip2 = nextToken();
    await apply(register(voip2, 6, 'alice', { previousToken: voip, tokenKind: 'voip' }));
    expect(await state(voip)).toMatchObject({ invalidation_reason: 'replaced', replaced_by: await idOf(voip2) });
  });

  it('the new token already her live device: the old one is invalidated, not linked (its pushes could reach the new token twice)', async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await oneByOne([register(old, 1, 'alice'), register(fresh, 2, 'alice')]);
    await apply(register(fresh, 5, 'alice', { previousToken: old }));
    expect(await state(old)).toEqual({
      user_id: 'alice',
      invalidated_at: at(5),
      invalidation_reason: 'replaced',
      replaced_by: null,
      last_event_at: at(1),
    });
  });

  it("links when the new token was hers but dead before the register; not when it was another user's live device (a broadcast may have made it a push of its own)", async () => {
    const [old1, dead] = [nextToken(), nextToken()];
    await oneByOne([register(old1, 1, 'alice'), register(dead, 2, 'alice')]);
    await t.db.devices.invalidate({
      app: 'app-a',
      platform: 'apns',
      token: dead,
      reason: 'BadDeviceToken',
      observedAt: new Date(at(3)),
    });
    await apply(register(dead, 5, 'alice', { previousToken: old1 }));
    expect(await state(old1)).toMatchObject({ invalidation_reason: 'replaced', replaced_by: await idOf(dead) });
    const [old2, bobs] = [nextToken(), nextToken()];
    await oneByOne([register(old2, 1, 'alice'), register(bobs, 2, 'bob')]);
    await apply(register(bobs, 5, 'alice', { previousToken: old2 }));
    expect(await state(old2)).toMatchObject({ invalidation_reason: 'replaced', replaced_by: null });
  });

  it('the rotation delivered again, or a later register still naming the old token, keeps the link', async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    await apply(register(fresh, 5, 'alice', { previousToken: old }));
    const linked = await state(old);
    expect(linked.replaced_by).toBe(await idOf(fresh));
    const updatedAt = async () =>
      (await t.db.kysely.selectFrom('devices').select('updated_at').where('token', '=', old).executeTakeFirstOrThrow())
        .updated_at;
    const changed = await updatedAt();
    expect(await apply(register(fresh, 5, 'alice', { previousToken: old }))).toBe('applied');
    expect(await state(old)).toEqual(linked);
    expect(await apply(register(fresh, 8, 'alice', { previousToken: old }))).toBe('applied');
    expect(await state(old)).toEqual(linked);
    // Left untouched: an app naming its previous token on every start does not keep the dead row from the prune.
    expect(await updatedAt()).toEqual(changed);
  });

  it("a stale rotation (older than the new device's last event) links nothing, nor one older than the old token's last event", async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await oneByOne([register(old, 1, 'alice'), register(fresh, 9, 'bob')]);
    expect(await apply(register(fresh, 5, 'alice', { previousToken: old }))).toBe('stale');
    expect(await state(old)).toEqual(live('alice', 1));
    const [newer, fresh2] = [nextToken(), nextToken()];
    await apply(register(newer, 7, 'alice'));
    expect(await apply(register(fresh2, 5, 'alice', { previousToken: newer }))).toBe('applied');
    expect(await state(newer)).toEqual(live('alice', 7));
  });

  it('a rotation that applies as her sign-in followed by her kept sign-out (the new device ends her tombstone) links nothing', async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await oneByOne([register(old, 1, 'alice'), register(fresh, 2, 'bob')]);
    expect(await apply(unregister(fresh, 6, 'alice'))).toBe('stale'); // kept: the device is bob's
    expect(await apply(register(fresh, 5, 'alice', { previousToken: old }))).toBe('applied');
    expect(await state(fresh)).toMatchObject({ user_id: 'alice', invalidation_reason: 'unregistered' });
    expect(await state(old)).toEqual(live('alice', 1));
  });

  it('a register of the old token after the rotation revives it and clears the link; an unregister keeps it', async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await oneByOne([register(old, 1, 'alice'), register(fresh, 5, 'alice', { previousToken: old })]);
    const linked = await state(old);
    // Her sign-out of the replaced token: its pushes still go where it was replaced by.
    expect(await apply(unregister(old, 6, 'alice'))).toBe('applied');
    expect(await state(old)).toMatchObject({
      invalidation_reason: 'replaced',
      replaced_by: linked.replaced_by,
      invalidated_at: linked.invalidated_at,
    });
    // One stamped before the rotation is stale against its invalidation.
    expect(await apply(register(old, 4, 'alice'))).toBe('stale');
    expect(await apply(register(old, 8, 'alice'))).toBe('applied');
    expect(await state(old)).toEqual(live('alice', 8));
  });

  it('a chain D1 → D2 → D3: each links to the one that replaced it', async () => {
    const [d1, d2, d3] = [nextToken(), nextToken(), nextToken()];
    await oneByOne([
      register(d1, 1, 'alice'),
      register(d2, 3, 'alice', { previousToken: d1 }),
      register(d3, 5, 'alice', { previousToken: d2 }),
    ]);
    expect(await state(d1)).toEqual({
      user_id: 'alice',
      invalidated_at: at(3),
      invalidation_reason: 'replaced',
      replaced_by: await idOf(d2),
      last_event_at: at(1),
    });
    expect(await state(d2)).toEqual({
      user_id: 'alice',
      invalidated_at: at(5),
      invalidation_reason: 'replaced',
      replaced_by: await idOf(d3),
      last_event_at: at(3),
    });
    expect(await state(d3)).toEqual(live('alice', 5));
  });

  it("a batch holding the old token's own events applies them in event-time order around the rotation, as one at a time", async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await apply(register(old, 1, 'alice'));
    expect(
      await t.db.devices.applyRegistrations([register(fresh, 5, 'alice', { previousToken: old }), register(old, 3, 'alice')]),
    ).toEqual(['applied', 'applied']);
    expect(await state(old)).toEqual({
      user_id: 'alice',
      invalidated_at: at(5),
      invalidation_reason: 'replaced',
      replaced_by: await idOf(fresh),
      last_event_at: at(3),
    });
    // The old token's register after the rotation revives it; her sign-out after it keeps the link (as one at a time).
    const [revived, fresh2, signedOut, fresh3] = [nextToken(), nextToken(), nextToken(), nextToken()];
    await oneByOne([register(revived, 1, 'alice'), register(signedOut, 1, 'alice')]);
    expect(
      await t.db.devices.applyRegistrations([
        register(revived, 7, 'alice'),
        register(fresh2, 5, 'alice', { previousToken: revived }),
        unregister(signedOut, 7, 'alice'),
        register(fresh3, 5, 'alice', { previousToken: signedOut }),
      ]),
    ).toEqual(['applied', 'applied', 'applied', 'applied']);
    expect(await state(revived)).toEqual(live('alice', 7));
    expect(await state(signedOut)).toMatchObject({
      invalidated_at: at(5),
      invalidation_reason: 'replaced',
      replaced_by: await idOf(fresh3),
      last_event_at: at(7),
    });
    // A device new in the batch, and D1 → D2 → D3 sent at once.
    const [d1, d2, d3] = [nextToken(), nextToken(), nextToken()];
    expect(
      await t.db.devices.applyRegistrations([
        register(d3, 5, 'alice', { previousToken: d2 }),
        register(d2, 3, 'alice', { previousToken: d1 }),
        register(d1, 1, 'alice'),
      ]),
    ).toEqual(['applied', 'applied', 'applied']);
    expect(await state(d1)).toMatchObject({ invalidation_reason: 'replaced', replaced_by: await idOf(d2) });
    expect(await state(d2)).toMatchObject({ invalidation_reason: 'replaced', replaced_by: await idOf(d3) });
    expect(await state(d3)).toEqual(live('alice', 5));
  });

  it('a register naming its own token as previousToken (refused at the doors) is a plain register', async () => {
    const token = nextToken();
    await apply(register(token, 1, 'alice'));
    expect(await t.db.devices.applyRegistrations([register(token, 5, 'alice', { previousToken: token })])).toEqual(['applied']);
    expect(await state(token)).toEqual(live('alice', 5));
  });

  it('a batch of rotations links each old token to its own new one; registers without previousToken leave other devices alone', async () => {
    const olds = [nextToken(), nextToken(), nextToken()];
    const fresh = [nextToken(), nextToken(), nextToken()];
    const untouched = nextToken();
    await oneByOne([...olds.map((o) => register(o, 1, 'alice')), register(untouched, 1, 'alice')]);
    await t.db.devices.applyRegistrations([
      ...olds.map((o, k) => register(fresh[k] as string, 5, 'alice', { previousToken: o })),
      register(nextToken(), 5, 'alice'),
    ]);
    for (const [k, o] of olds.entries())
      expect(await state(o)).toMatchObject({ invalidation_reason: 'replaced', replaced_by: await idOf(fresh[k] as string) });
    expect(await state(untouched)).toEqual(live('alice', 1));
  });
  it("an erasure of the user drops her old tokens' links: a push made before it is not moved to her phone when she signs in again", async () => {
    const [old, fresh] = [nextToken(), nextToken()];
    await oneByOne([register(old, 1, 'erin'), register(fresh, 2, 'erin', { previousToken: old })]);
    expect((await state(old)).replaced_by).toBe(await idOf(fresh));
    await eraseUser(t.db.kysely, 'app-a', 'erin');
    expect((await state(old)).replaced_by).toBeNull();
    // She signs up again on the same phone.
    expect(await apply({ ...register(fresh, 0, 'erin'), eventAt: new Date(Date.now() + 1_000).toISOString() })).toBe('applied');
    const queued = { pushId: randomUUID(), deviceId: await idOf(old), token: old, userId: 'erin' };
    expect(await t.db.ledger.claimLive([queued], 'pusher-1', 60_000)).toEqual(new Map([[queued.pushId, 'dead']]));
  });
  it('a rotation takes the two rows in the key order of every writer: one holding the old token and then asking the new one is not deadlocked', async () => {
    const [low, high] = [`a-${nextToken()}`, `b-${nextToken()}`];
    await oneByOne([register(low, 1, 'dora'), register(high, 2, 'dora')]);
    await t.db.devices.invalidate({ app: 'app-a', platform: 'apns', token: high, reason: 'Unregistered', observedAt: new Date(at(3)) });
    // Another writer (a registrar batch naming both, an erasure) takes the lower key first.
    const other = new pg.Client({ connectionString: t.url, options: `-c search_path=${t.schema}` });
    await other.connect();
    try {
      await other.query('begin');
      await other.query('select id from devices where token = $1 for update', [low]);
      const rotation = apply(register(high, 5, 'dora', { previousToken: low }));
      await new Promise((r) => setTimeout(r, 300));
      // Before, the rotation held the new token's row (its upsert) while it waited for the old one's: this waited for it, a deadlock.
      await other.query('select id from devices where token = $1 for update', [high]);
      await other.query('rollback');
      expect(await rotation).toBe('applied');
      expect(await state(low)).toMatchObject({ invalidation_reason: 'replaced', replaced_by: await idOf(high) });
    } finally {
      await other.end();
    }
  });
});
