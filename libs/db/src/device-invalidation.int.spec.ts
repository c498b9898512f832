import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { createDatabase } from './database.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('device_inv');
  await t.db.apps.upsert({ id: 'app-a' });
});
afterAll(() => t.drop());

let n = 0;
const nextToken = () => `inv-${++n}-${Math.random().toString(36).slice(2)}`;
const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 12, minute));

async function registered(token: string, minute: number): Promise<void> {
  const eventAt = at(minute).toISOString();
  await t.db.devices.applyRegistration({
    version: 1,
    kind: 'register',
    app: 'app-a',
    platform: 'fcm',
    token,
    userId: 'u',
    eventAt,
  });
}
const invalidation = (token: string, extra: { invalidSince?: Date; observedAt?: Date; reason?: string } = {}) => ({
  app: 'app-a',
  platform: 'fcm' as const,
  token,
  reason: 'UNREGISTERED',
  observedAt: at(50),
  ...extra,
});
const device = (token: string) =>
  t.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirstOrThrow();

describe('DeviceRepository.invalidate', () => {
  it("stores a provider's reason that holds a NUL byte (FCM's message is the provider's text), readable", async () => {
    // Before, PostgreSQL refused the whole batch (22021) and the invalidations were retried, then parked.
    const token = nextToken();
    await registered(token, 1);
    expect(await t.db.devices.invalidate(invalidation(token, { reason: 'INVALID_ARGUMENT: bad token \u0000 here' }))).toBe('invalidated');
    const row = await device(token);
    expect(row.invalidation_reason).toMatch(/^INVALID_ARGUMENT: bad token .+ here$/);
    expect(row.invalidation_reason).not.toContain('\u0000');
  });

  it('invalidates an active device without invalidSince, recording reason and observed time', async () => {
    const token = nextToken();
    await registered(token, 1);
    expect(await t.db.devices.invalidate(invalidation(token))).toBe('invalidated');
    const row = await device(token);
    expect(row.invalidation_reason).toBe('UNREGISTERED');
    expect(row.invalidated_at?.toISOString()).toBe(at(50).toISOString());
  });

  it('invalidates when the device registered before invalidSince', async () => {
    const token = nextToken();
    await registered(token, 1);
    expect(await t.db.devices.invalidate(invalidation(token, { invalidSince: at(5) }))).toBe('invalidated');
    expect((await device(token)).invalidated_at?.toISOString()).toBe(at(5).toISOString());
  });

  it('keeps the token when the device registered after invalidSince (stale)', async () => {
    const token = nextToken();
    await registered(token, 10);
    expect(await t.db.devices.invalidate(invalidation(token, { invalidSince: at(5) }))).toBe('stale');
    expect((await device(token)).invalidated_at).toBeNull();
  });

  it('without invalidSince, a registration after the observed time keeps the token whichever is processed first', async () => {
    // FCM UNREGISTERED, APNs BadDeviceToken and Web Push 404/410 give no invalid-since: observed at :45,
    // re-registered at :49. Before, the invalidation processed second killed the token (registered_at was
    // compared with invalidSince only), while processed first the register revived it.
    const invalidationFirst = nextToken();
    await registered(invalidationFirst, 1);
    expect(await t.db.devices.invalidate(invalidation(invalidationFirst, { observedAt: at(45) }))).toBe('invalidated');
    await registered(invalidationFirst, 49);
    expect((await device(invalidationFirst)).invalidated_at).toBeNull();

    const registerFirst = nextToken();
    await registered(registerFirst, 1);
    await registered(registerFirst, 49);
    expect(await t.db.devices.invalidate(invalidation(registerFirst, { observedAt: at(45) }))).toBe('stale');
    expect((await device(registerFirst)).invalidated_at).toBeNull();
  });

  it('answers unknown for a token never registered, and writes nothing', async () => {
    const token = nextToken();
    expect(await t.db.devices.invalidate(invalidation(token))).toBe('unknown');
    expect(await t.db.kysely.selectFrom('devices').select('id').where('token', '=', token).execute()).toEqual([]);
  });

  it('is idempotent and keeps the first reason; an earlier time leaves it, a later one moves it on', async () => {
    const token = nextToken();
    await registered(token, 1);
    await t.db.devices.invalidate(invalidation(token, { invalidSince: at(5) }));
    expect(await t.db.devices.invalidate(invalidation(token, { invalidSince: at(5) }))).toBe('invalidated');
    expect(await t.db.devices.invalidate(invalidation(token, { invalidSince: at(3), reason: 'Other' }))).toBe('invalidated');
    expect((await device(token)).invalidated_at?.toISOString()).toBe(at(5).toISOString());
    expect(await t.db.devices.invalidate(invalidation(token, { invalidSince: at(7), reason: 'Other' }))).toBe('invalidated');
    const row = await device(token);
    expect(row.invalidation_reason).toBe('UNREGISTERED');
    expect(row.invalidated_at?.toISOString()).toBe(at(7).toISOString());
  });

  it("a logout, then a provider's later dead time: a register stamped between them, delivered late, does not resurrect the token", async () => {
    const token = nextToken();
    await registered(token, 1);
    await t.db.devices.applyRegistration({ version: 1, kind: 'unregister', app: 'app-a', platform: 'fcm', token, eventAt: at(10).toISOString() }); // the logout
    await t.db.devices.invalidate(invalidation(token, { invalidSince: at(20) })); // a 410 for a push sent before it was applied
    await registered(token, 15);
    expect((await device(token)).invalidated_at?.toISOString()).toBe(at(20).toISOString());
    expect((await device(token)).invalidation_reason).toBe('unregistered');
  });

  it('a register event from before the invalidation, delivered late, does not resurrect the token', async () => {
    const token = nextToken();
    await registered(token, 1);
    await t.db.devices.invalidate(invalidation(token, { invalidSince: at(20) }));
    await registered(token, 15);
    expect((await device(token)).invalidated_at?.toISOString()).toBe(at(20).toISOString());
    await registered(token, 25);
    expect((await device(token)).invalidated_at).toBeNull();
  });

  // A pusher's clock running ahead stamped the invalidation in the future, and the app's next registration of the token, capped at the database's now, was stale.
  it("records an invalidation at most at the database's now, so the app's registration right after it applies", async () => {
    const token = nextToken();
    await registered(token, 1);
    const ahead = new Date(Date.now() + 10 * 60_000);
    expect(await t.db.devices.invalidate(invalidation(token, { observedAt: ahead }))).toBe('invalidated');
    expect((await device(token)).invalidated_at?.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'app-a', platform: 'fcm', token, userId: 'u', eventAt: new Date().toISOString() });
    expect((await device(token)).invalidated_at).toBeNull();
  });

  it('handles a batch in one call, results in input order', async () => {
    const [a, b, c] = [nextToken(), nextToken(), nextToken()];
    await registered(a, 1);
    await registered(b, 10);
    const results = await t.db.devices.invalidateMany([
      invalidation(a),
      invalidation(b, { invalidSince: at(5) }),
      invalidation(c),
      invalidation(a, { reason: 'again' }),
    ]);
    expect(results).toEqual(['invalidated', 'stale', 'unknown', 'invalidated']);
  });
});

describe('DeviceRepository.invalidateMany under concurrency', () => {
  it('overlapping batches in opposite orders neither deadlock nor disagree', async () => {
    const tokens = Array.from({ length: 100 }, nextToken);
    await t.db.devices.applyRegistrations(
      tokens.map((token) => ({
        version: 1,
        kind: 'register',
        app: 'app-a',
        platform: 'fcm',
        token,
        userId: 'u',
        eventAt: at(1).toISOString(),
      })),
    );
    const other = createDatabase({ url: t.url, schema: t.schema, poolSize: 2 });
    try {
      const [r1, r2] = await Promise.all([
        t.db.devices.invalidateMany(tokens.map((token) => invalidation(token))),
        other.devices.invalidateMany(tokens.map((token) => invalidation(token, { reason: 'second' })).reverse()),
      ]);
      expect(new Set([...r1, ...r2])).toEqual(new Set(['invalidated']));
      const rows = await t.db.kysely.selectFrom('devices').select('invalidated_at').where('token', 'in', tokens).execute();
      expect(rows.filter((r) => r.invalidated_at === null)).toEqual([]);
    } finally {
      await other.close();
    }
  });
});
