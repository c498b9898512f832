import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@herald/testing';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { createDatabase, type Database } from './database.ts';
import { createRateLimitRepository } from './rate-limit-repository.ts';

const WINDOW_MS = 100;
let t: SpecDatabase;
let others: Database[];
beforeAll(async () => {
  t = await createSpecDatabase('limits');
  // Three more pools: separate "processes" leasing against the same rows.
  others = [1, 2, 3].map(() => createDatabase({ url: t.url, schema: t.schema, poolSize: 4 }));
});
afterAll(async () => {
  await Promise.all(others.map((o) => o.close()));
  await t.drop();
});

/** Wait until at least `margin` ms remain in the current window, so a test's leases share one window. */
async function startOfWindow(margin = 80): Promise<void> {
  while (WINDOW_MS - (Date.now() % WINDOW_MS) < margin) await new Promise((r) => setTimeout(r, 1));
}

describe('RateLimitRepository', () => {
  it('set, list, change and remove budgets; no budget means no lease', async () => {
    expect(await t.db.rateLimits.lease({ platform: 'fcm' }, 10, WINDOW_MS)).toBeUndefined();
    await t.db.rateLimits.set({ platform: 'fcm' }, 100);
    await t.db.rateLimits.set({ platform: 'fcm', app: 'demo' }, 20);
    await t.db.rateLimits.set({ platform: 'fcm' }, 300);
    const rows = await t.db.rateLimits.list();
    expect(rows.filter((r) => r.platform === 'fcm').map((r) => [r.app, r.ratePerSec])).toEqual([
      ['', 300],
      ['demo', 20],
    ]);
    expect(await t.db.rateLimits.remove({ platform: 'fcm', app: 'demo' })).toBe(true);
    expect(await t.db.rateLimits.remove({ platform: 'fcm', app: 'demo' })).toBe(false);
    expect(await t.db.rateLimits.lease({ platform: 'fcm', app: 'demo' }, 10, WINDOW_MS)).toBeUndefined();
    await t.db.rateLimits.remove({ platform: 'fcm' });
  });

  it('provider pauses: at least the time asked from the database\'s now, per platform and app, only ever longer', async () => {
    expect(await t.db.rateLimits.pauses('apns')).toEqual([]);
    await t.db.rateLimits.pause({ platform: 'apns', app: 'p' }, 3_000);
    await (others[0] as Database).rateLimits.pause({ platform: 'apns', app: 'p' }, 500); // a shorter one from another pusher
    await t.db.rateLimits.pause({ platform: 'fcm', app: 'p' }, 60_000);
    const [apns] = await (others[1] as Database).rateLimits.pauses('apns');
    expect(apns?.app).toBe('p');
    expect(apns?.msLeft).toBeGreaterThan(2_500);
    expect(apns?.msLeft).toBeLessThanOrEqual(3_000);
    expect((await t.db.rateLimits.pauses('fcm')).map((p) => p.app)).toEqual(['p']);
    await t.db.rateLimits.pause({ platform: 'apns', app: 'q' }, 100);
    await new Promise((r) => setTimeout(r, 150));
    expect((await t.db.rateLimits.pauses('apns')).map((p) => p.app)).toEqual(['p']); // q's pause is over
    await t.db.rateLimits.pause({ platform: 'apns', app: 'q' }, 10_000); // and q can be paused again
    expect((await t.db.rateLimits.pauses('apns')).map((p) => p.app).sort()).toEqual(['p', 'q']);
  });

  it('a Web Push pause of a 64-character app at a 253-character push service host is shared; pauses that ended a day ago are deleted by the next', async () => {
    const longHost = `${'h'.repeat(63)}.${'o'.repeat(63)}.${'s'.repeat(63)}.${'t'.repeat(53)}.example`;
    const sender = `${'a'.repeat(64)}@${longHost}`;
    expect(longHost).toHaveLength(253);
    await t.db.rateLimits.pause({ platform: 'web', app: sender }, 10_000);
    expect((await (others[0] as Database).rateLimits.pauses('web')).map((p) => p.app)).toEqual([sender]);
    await t.db.kysely.insertInto('provider_pauses').values({ platform: 'web', app: 'old@wns2-by3p.notify.windows.com', paused_until: new Date(Date.now() - 2 * 86_400_000) }).execute();
    await t.db.rateLimits.pause({ platform: 'web', app: 'b@fcm.googleapis.com' }, 1_000);
    const rows = await t.db.kysely.selectFrom('provider_pauses').select('app').where('platform', '=', 'web').execute();
    expect(rows.map((r) => r.app).sort()).toEqual([sender, 'b@fcm.googleapis.com'].sort());
  });

  it('grants at most the window share, then nothing until the next window', async () => {
    await t.db.rateLimits.set({ platform: 'apns', app: 'a' }, 500); // 50 per 100 ms window
    await startOfWindow();
    const first = await t.db.rateLimits.lease({ platform: 'apns', app: 'a' }, 30, WINDOW_MS);
    const second = await t.db.rateLimits.lease({ platform: 'apns', app: 'a' }, 30, WINDOW_MS);
    const third = await t.db.rateLimits.lease({ platform: 'apns', app: 'a' }, 30, WINDOW_MS);
    expect([first?.granted, second?.granted, third?.granted]).toEqual([30, 20, 0]);
    expect(third?.ratePerSec).toBe(500);
    expect(third?.msLeftInWindow).toBeGreaterThan(0);
    expect(third?.msLeftInWindow).toBeLessThanOrEqual(WINDOW_MS);
    await new Promise((r) => setTimeout(r, (third?.msLeftInWindow ?? 0) + 5));
    expect((await t.db.rateLimits.lease({ platform: 'apns', app: 'a' }, 30, WINDOW_MS))?.granted).toBe(30);
  });

  it('one lease late in a window gets no more than the share of the time left', async () => {
    await t.db.rateLimits.set({ platform: 'apns', app: 'late' }, 500);
    // Between 5 and 20 ms of a window to go (the database's clock may differ by a little).
    while (WINDOW_MS - (Date.now() % WINDOW_MS) > 20 || WINDOW_MS - (Date.now() % WINDOW_MS) < 5)
      await new Promise((r) => setTimeout(r, 1));
    const late = await t.db.rateLimits.lease({ platform: 'apns', app: 'late' }, 1000, WINDOW_MS);
    expect(late?.granted).toBe(Math.ceil((50 * (late?.msLeftInWindow ?? 0)) / WINDOW_MS));
    expect(late?.granted).toBeLessThan(50);
  });

  it("after the database's clock stepped back a minute, leases are granted at once; a lease a window behind (it waited for the row lock) gets nothing", async () => {
    await t.db.rateLimits.set({ platform: 'apns', app: 'stepped' }, 1000);
    const key = { platform: 'apns' as const, app: 'stepped' };
    const lease = async () => (await t.db.rateLimits.lease(key, 50, WINDOW_MS))?.granted;
    await startOfWindow();
    expect(await lease()).toBeGreaterThan(0);
    const ahead = (windows: number) => t.db.kysely.updateTable('rate_limits').set((eb) => ({ window_index: eb('window_index', '+', String(windows)) })).where('app', '=', 'stepped').execute();
    // The row's window a few windows ahead of the clock: a caller that read its clock before waiting for the lock.
    await ahead(3);
    expect(await lease()).toBe(0);
    // Its last lease was made a minute ahead of the clock as it reads now.
    await ahead(600);
    await startOfWindow();
    expect(await lease()).toBeGreaterThan(0);
    expect(await lease()).toBeGreaterThan(0);
  });

  it('a lease that waited for the row lock over a second, while a later lease went first, gets nothing: it does not restart the window, which keeps its share', async () => {
    await t.db.rateLimits.set({ platform: 'fcm', app: 'waited' }, 1000);
    const key = { platform: 'fcm' as const, app: 'waited' };
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let locked = (): void => undefined;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    let first: { granted: number; windowIndex: number } | undefined;
    // A transaction holding the budget's row, whose own lease, made last, is applied first.
    const holder = t.db.kysely.transaction().execute(async (trx) => {
      await trx.selectFrom('rate_limits').select('app').where('platform', '=', 'fcm').where('app', '=', 'waited').forUpdate().execute();
      locked();
      await gate;
      await startOfWindow();
      first = await createRateLimitRepository(trx).lease(key, 50, WINDOW_MS);
    });
    await isLocked;
    const waited = others[0]?.rateLimits.lease(key, 50, WINDOW_MS) ?? Promise.reject(new Error('no pool'));
    await waitFor('the lease waiting for the row', async () =>
      (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%update rate_limits%'`.execute(t.db.kysely)).rows[0]?.n ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 1_300));
    release();
    await holder;
    expect((await waited)?.granted).toBe(0);
    const next = await t.db.rateLimits.lease(key, 100, WINDOW_MS);
    const shareOf = 100; // 1,000/s in 100 ms windows
    const sameWindow = [first, next].filter((g) => g?.windowIndex === first?.windowIndex);
    expect(sameWindow.reduce((n, g) => n + (g?.granted ?? 0), 0)).toBeLessThanOrEqual(shareOf);
  });

  it('a changed rate applies to the very next lease', async () => {
    await t.db.rateLimits.set({ platform: 'apns', app: 'b' }, 100); // 10 per window
    await startOfWindow(96); // one lease gets all 10 only with over 90 ms to go
    expect((await t.db.rateLimits.lease({ platform: 'apns', app: 'b' }, 50, WINDOW_MS))?.granted).toBe(10);
    await t.db.rateLimits.set({ platform: 'apns', app: 'b' }, 1000); // 100 per window
    const after = await t.db.rateLimits.lease({ platform: 'apns', app: 'b' }, 500, WINDOW_MS);
    // Of the window's 100, 10 are gone; one lease gets no more than the share of the time left.
    expect(after?.granted).toBe(Math.min(90, Math.ceil((100 * (after?.msLeftInWindow ?? 0)) / WINDOW_MS)));
    expect(after?.granted).toBeGreaterThanOrEqual(50);
  });

  it('many concurrent leasers on four pools never get more than a window share in any window', async () => {
    // 70 a window, ten leases of 7: a budget the leasers exhaust even when other test files
    // share the machine's two cores (at 2,000/s they needed ~290 lease round trips a second).
    await t.db.rateLimits.set({ platform: 'apns' }, 700);
    const grants = new Map<number, number>();
    const until = Date.now() + 1500;
    const leaser = async (db: Database): Promise<void> => {
      while (Date.now() < until) {
        const before = Date.now();
        const g = await db.rateLimits.lease({ platform: 'apns' }, 7, WINDOW_MS);
        if (g !== undefined && g.granted > 0) grants.set(g.windowIndex, (grants.get(g.windowIndex) ?? 0) + g.granted);
        if (Date.now() - before > 1000) throw new Error('lease took over a second');
      }
    };
    await Promise.all([t.db, ...others].flatMap((db) => [leaser(db), leaser(db), leaser(db), leaser(db)]));
    const counts = [...grants.values()];
    expect(counts.length).toBeGreaterThanOrEqual(12);
    expect(Math.max(...counts)).toBeLessThanOrEqual(70);
    // Sixteen leasers asking for 7 at a time exhaust every window: the budget is handed out in full.
    const full = counts.filter((c) => c === 70).length;
    expect(full).toBeGreaterThanOrEqual(counts.length - 3);
  });
});
