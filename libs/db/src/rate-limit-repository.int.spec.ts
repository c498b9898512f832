import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { createDatabase, type Database } from './database.ts';

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
async function startOfWindow(margin = 60): Promise<void> {
  while (WINDOW_MS - (Date.now() % WINDOW_MS) < margin) await new Promise((r) => setTimeout(r, 5));
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

  it('grants at most the window share, then nothing until the next window', async () => {
    await t.db.rateLimits.set({ platform: 'apns', app: 'a' }, 500);
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

  it('a changed rate applies to the very next lease', async () => {
    await t.db.rateLimits.set({ platform: 'apns', app: 'b' }, 100);
    await startOfWindow();
    expect((await t.db.rateLimits.lease({ platform: 'apns', app: 'b' }, 50, WINDOW_MS))?.granted).toBe(10);
    await t.db.rateLimits.set({ platform: 'apns', app: 'b' }, 1000);
    expect((await t.db.rateLimits.lease({ platform: 'apns', app: 'b' }, 500, WINDOW_MS))?.granted).toBe(90);
  });

  it('many concurrent leasers on four pools never get more than a window share in any window', async () => {
    await t.db.rateLimits.set({ platform: 'apns' }, 2000);
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
    expect(Math.max(...counts)).toBeLessThanOrEqual(200);
    // Sixteen leasers asking for 7 at a time exhaust every window: the budget is handed out in full.
    const full = counts.filter((c) => c === 200).length;
    expect(full).toBeGreaterThanOrEqual(counts.length - 3);
  });
});
