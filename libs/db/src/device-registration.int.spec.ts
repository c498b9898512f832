import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Registration } from '@herald/contracts';
import { createSpecDatabase, specMinute, specRegister, specUnregister, type SpecDatabase } from './spec-database.ts';
import { createDatabase } from './database.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('device_reg');
  await t.db.apps.upsert({ id: 'app-a' });
});
afterAll(() => t.drop());

let n = 0;
const nextToken = () => `tok-${++n}-${Math.random().toString(36).slice(2)}`;
const at = specMinute;

type RegisterExtra = { userId?: string; timezone?: string; locale?: string; tokenKind?: 'device' | 'voip' | 'liveactivity' };
const register = (token: string, minute: number, extra: RegisterExtra = {}): Registration => specRegister(token, minute, 'u1', extra);
const unregister = (token: string, minute: number, userId?: string): Registration => specUnregister(token, minute, userId);

const device = (token: string) => t.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirst();

describe('DeviceRepository.applyRegistration', () => {
  it('stores a register with user, timezone, locale and event times', async () => {
    const token = nextToken();
    expect(await t.db.devices.applyRegistration(register(token, 0, { timezone: 'Europe/Berlin', locale: 'de-DE' }))).toBe(
      'applied',
    );
    const row = await device(token);
    expect(row).toMatchObject({ user_id: 'u1', timezone: 'Europe/Berlin', locale: 'de-DE', invalidated_at: null });
    expect(row?.registered_at?.toISOString()).toBe(at(0));
    expect(row?.last_event_at.toISOString()).toBe(at(0));
  });

  it('register then an older unregister: the unregister is stale and the device stays active', async () => {
    const token = nextToken();
    await t.db.devices.applyRegistration(register(token, 10));
    expect(await t.db.devices.applyRegistration(unregister(token, 5))).toBe('stale');
    expect((await device(token))?.invalidated_at).toBeNull();
  });

  it('unregister then an older register: no resurrection, even for a token never seen before', async () => {
    const token = nextToken();
    expect(await t.db.devices.applyRegistration(unregister(token, 10))).toBe('applied');
    const tombstone = await device(token);
    expect(tombstone).toMatchObject({ user_id: null, invalidation_reason: 'unregistered' });
    expect(tombstone?.invalidated_at?.toISOString()).toBe(at(10));
    expect(await t.db.devices.applyRegistration(register(token, 5))).toBe('stale');
    expect((await device(token))?.invalidated_at?.toISOString()).toBe(at(10));
  });

  it('a newer register revives an unregistered token and a newer unregister kills it again', async () => {
    const token = nextToken();
    await t.db.devices.applyRegistration(register(token, 1));
    expect(await t.db.devices.applyRegistration(unregister(token, 2))).toBe('applied');
    expect(await t.db.devices.applyRegistration(register(token, 3, { userId: 'u2' }))).toBe('applied');
    expect(await device(token)).toMatchObject({ user_id: 'u2', invalidated_at: null, invalidation_reason: null });
    expect(await t.db.devices.applyRegistration(unregister(token, 4))).toBe('applied');
    const row = await device(token);
    expect(row).toMatchObject({ user_id: 'u2', invalidation_reason: 'unregistered' });
    expect(row?.registered_at?.toISOString()).toBe(at(3));
  });

  it('a redelivered identical event is applied again without changing anything', async () => {
    const token = nextToken();
    await t.db.devices.applyRegistration(register(token, 7));
    expect(await t.db.devices.applyRegistration(register(token, 7))).toBe('applied');
    expect(await t.db.kysely.selectFrom('devices').select('id').where('token', '=', token).execute()).toHaveLength(1);
  });
});

describe('DeviceRepository.applyRegistrations (batch)', () => {
  it("applies a batch as if its events came one at a time in event-time order; results in the batch's order", async () => {
    const [a, b, c] = [nextToken(), nextToken(), nextToken()];
    await t.db.devices.applyRegistration(register(c, 30));
    const results = await t.db.devices.applyRegistrations([
      register(a, 1),
      unregister(b, 9),
      register(b, 8),
      unregister(a, 2),
      register(c, 20),
    ]);
    expect(results).toEqual(['applied', 'applied', 'applied', 'applied', 'stale']);
    expect((await device(a))?.invalidation_reason).toBe('unregistered');
    expect((await device(b))?.invalidated_at?.toISOString()).toBe(at(9));
    expect((await device(c))?.registered_at?.toISOString()).toBe(at(30));
  });

  it('concurrent overlapping batches in opposite orders neither deadlock nor lose the newest event', async () => {
    const other = createDatabase({ url: t.url, schema: t.schema, poolSize: 2 });
    try {
      const tokens = Array.from({ length: 100 }, nextToken);
      await Promise.all([
        t.db.devices.applyRegistrations(tokens.map((tok) => register(tok, 1))),
        other.devices.applyRegistrations(tokens.map((tok) => unregister(tok, 2)).reverse()),
      ]);
      const rows = await t.db.kysely.selectFrom('devices').select('invalidation_reason').where('token', 'in', tokens).execute();
      expect(rows).toHaveLength(100);
      expect(rows.every((r) => r.invalidation_reason === 'unregistered')).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('a register stamped the same time as the stored unregister is registered now, not when the row was first registered', async () => {
    const token = nextToken();
    expect(await t.db.devices.applyRegistration(register(token, 1))).toBe('applied');
    expect(await t.db.devices.applyRegistration(unregister(token, 5))).toBe('applied');
    expect(await t.db.devices.applyRegistration(register(token, 5, { userId: 'u2' }))).toBe('applied');
    expect(await device(token)).toMatchObject({ user_id: 'u2', invalidated_at: null, registered_at: new Date(at(5)) });
  });

  it('a register that does not name its token kind keeps the device\'s (a VoIP token refreshed on start stays VoIP); one that names it sets it', async () => {
    const token = nextToken();
    await t.db.devices.applyRegistration(register(token, 0, { tokenKind: 'voip' }));
    expect(await t.db.devices.applyRegistration(register(token, 1))).toBe('applied');
    expect((await device(token))?.token_kind).toBe('voip');
    await t.db.devices.applyRegistration(register(token, 2, { tokenKind: 'device' }));
    expect((await device(token))?.token_kind).toBe('device');
    // An unregister and a register after it without a kind: still the kind it had.
    const live = nextToken();
    await t.db.devices.applyRegistration(register(live, 0, { tokenKind: 'liveactivity' }));
    await t.db.devices.applyRegistration(unregister(live, 1));
    await t.db.devices.applyRegistration(register(live, 2));
    expect((await device(live))?.token_kind).toBe('liveactivity');
    const fresh = nextToken();
    await t.db.devices.applyRegistration(register(fresh, 0));
    expect((await device(fresh))?.token_kind).toBe('device');
  });

  it("an unregister naming its user applies only while the device is that user's: a late sign-out of the phone's last user leaves the new one", async () => {
    const token = nextToken();
    await t.db.devices.applyRegistration(register(token, 0, { userId: 'alice' }));
    await t.db.devices.applyRegistration(register(token, 1, { userId: 'bob' }));
    // Alice's backend signs her out everywhere from its old list of her tokens.
    expect(await t.db.devices.applyRegistration(unregister(token, 2, 'alice'))).toBe('stale');
    expect(await device(token)).toMatchObject({ user_id: 'bob', invalidated_at: null });
    expect(await t.db.devices.applyRegistration(unregister(token, 3, 'bob'))).toBe('applied');
    expect(await device(token)).toMatchObject({ user_id: 'bob', invalidation_reason: 'unregistered' });
    // Without a user, it applies whoever holds the device, as before.
    const other = nextToken();
    await t.db.devices.applyRegistration(register(other, 0, { userId: 'bob' }));
    expect(await t.db.devices.applyRegistration(unregister(other, 1))).toBe('applied');
    expect(await device(other)).toMatchObject({ invalidation_reason: 'unregistered' });
    // For a token never seen, the tombstone keeps no user (a tombstone matches nobody's devices).
    const unknown = nextToken();
    expect(await t.db.devices.applyRegistration(unregister(unknown, 1, 'alice'))).toBe('applied');
    expect(await device(unknown)).toMatchObject({ user_id: null, invalidation_reason: 'unregistered' });
  });

  it("in one batch, the new user's register beats the old user's later sign-out of the same device", async () => {
    const token = nextToken();
    await t.db.devices.applyRegistration(register(token, 0, { userId: 'alice' }));
    expect(await t.db.devices.applyRegistrations([register(token, 1, { userId: 'bob' }), unregister(token, 2, 'alice')])).toEqual(['applied', 'stale']);
    expect(await device(token)).toMatchObject({ user_id: 'bob', invalidated_at: null });
    // Her own sign-out after her own register in a batch still applies.
    const mine = nextToken();
    await t.db.devices.applyRegistration(register(mine, 0, { userId: 'alice' }));
    expect(await t.db.devices.applyRegistrations([register(mine, 1, { userId: 'alice' }), unregister(mine, 2, 'alice')])).toEqual(['applied', 'applied']);
    expect(await device(mine)).toMatchObject({ user_id: 'alice', invalidation_reason: 'unregistered' });
  });

  it("in one batch, a user's sign-out after her own register on a shared tablet applies, whoever registered it before her", async () => {
    const tablet = nextToken();
    // A registrar backlog: bob's register, then alice's, then her sign-out, all in one batch.
    expect(await t.db.devices.applyRegistrations([register(tablet, 1, { userId: 'bob' }), register(tablet, 3, { userId: 'alice' }), unregister(tablet, 4, 'alice')])).toEqual([
      'applied',
      'applied',
      'applied',
    ]);
    expect(await device(tablet)).toMatchObject({ invalidation_reason: 'unregistered' });
    // Stored as hers; bob's older register comes late (a retry) with her sign-out: his is stale, hers applies.
    const late = nextToken();
    await t.db.devices.applyRegistration(register(late, 2, { userId: 'alice' }));
    expect(await t.db.devices.applyRegistrations([register(late, 1, { userId: 'bob' }), unregister(late, 3, 'alice')])).toEqual(['stale', 'applied']);
    expect(await device(late)).toMatchObject({ invalidation_reason: 'unregistered' });
  });

  it('returns an empty list for an empty batch', async () => {
    expect(await t.db.devices.applyRegistrations([])).toEqual([]);
  });
});
