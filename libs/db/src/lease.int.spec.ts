import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDatabase, type Database } from './database.ts';
import { holdLease, type Lease } from './lease.ts';
import { createSpecDatabase, SPEC_DATABASE_URL, type SpecDatabase } from './spec-database.ts';

const TTL = 1_500;
let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('lease');
});
afterAll(() => t.drop());

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
async function until(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<number> {
  const start = Date.now();
  while (!ok()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
  return Date.now() - start;
}

describe('holdLease', () => {
  it('gives the lease to one of two instances, and to the other at once when the holder stops', async () => {
    const a = holdLease(t.db.kysely, { name: 'once', holder: 'a', ttlMs: TTL });
    await until('a holds', () => a.held());
    const b = holdLease(t.db.kysely, { name: 'once', holder: 'b', ttlMs: TTL });
    await sleep(TTL); // b has tried several times meanwhile
    expect([a.held(), b.held()]).toEqual([true, false]);
    await a.stop();
    expect(a.held()).toBe(false);
    // b asks every third of the ttl: the freed row is its own at its next renewal.
    await until('b takes over', () => b.held(), TTL);
    await b.stop();
  });

  it('passes to another instance within the ttl when the holder dies (stops renewing), never held by both', async () => {
    const dying: Database = createDatabase({ url: SPEC_DATABASE_URL, schema: t.schema, poolSize: 1 });
    const changes: Array<{ who: string; held: boolean; at: number }> = [];
    const watch = (who: string) => (held: boolean) => changes.push({ who, held, at: Date.now() });
    const a: Lease = holdLease(dying.kysely, { name: 'crash', holder: 'a', ttlMs: TTL, onChange: watch('a') });
    await until('a holds', () => a.held());
    const b = holdLease(t.db.kysely, { name: 'crash', holder: 'b', ttlMs: TTL, onChange: watch('b') });
    await dying.close(); // a's renewals fail from now on, as if its process had died
    const diedAt = Date.now();
    await until('b takes over', () => b.held(), 3 * TTL);
    const tookOverAfterMs = Date.now() - diedAt;
    const aLost = changes.find((c) => c.who === 'a' && !c.held);
    const bGot = changes.find((c) => c.who === 'b' && c.held);
    expect(aLost).toBeDefined();
    expect(bGot).toBeDefined();
    // a gives up locally a tenth of the ttl before its row runs out; b can only take an expired row.
    expect((bGot?.at ?? 0) - (aLost?.at ?? Infinity)).toBeGreaterThan(0);
    expect(tookOverAfterMs).toBeLessThan(TTL + TTL / 3 + 500);
    await a.stop();
    await b.stop();
  });

  it('says who holds it cannot be known while the database does not answer, and stops saying so once it does', async () => {
    // Nothing listens on port 1: every renewal fails.
    const down = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/test', schema: t.schema, poolSize: 1 });
    const lost = holdLease(down.kysely, { name: 'unknown-spec', holder: 'a', ttlMs: TTL });
    const up = holdLease(t.db.kysely, { name: 'unknown-spec', holder: 'b', ttlMs: TTL });
    try {
      await until('a failed renewal', () => lost.unknown());
      expect(lost.held()).toBe(false);
      await until('b holds it', () => up.held());
      expect(up.unknown()).toBe(false);
    } finally {
      await lost.stop();
      await up.stop();
      await down.close();
    }
  });

  it('a renewal that gets no answer (its row locked, a database that hangs) fails after a third of the ttl: once the lease runs out it reads as unknown, not as held by another', async () => {
    const a = holdLease(t.db.kysely, { name: 'hung', holder: 'a', ttlMs: TTL });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    try {
      await until('a holds', () => a.held());
      const locking = t.db.kysely.transaction().execute(async (trx) => {
        await sql`select 1 from leases where name = 'hung' for update`.execute(trx);
        await gate;
      });
      await until('a reads unknown', () => a.unknown(), 3 * TTL);
      expect(a.held()).toBe(false);
      release();
      await locking;
      await until('a holds again', () => a.held(), 3 * TTL);
      expect(a.unknown()).toBe(false);
    } finally {
      release();
      await a.stop();
    }
  });

  it('runs out on time while renewals get no answer even when the wall clock is stepped back (an NTP correction)', async () => {
    const a = holdLease(t.db.kysely, { name: 'stepped', holder: 'a', ttlMs: TTL });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const wall = Date.now.bind(Date);
    try {
      await until('a holds', () => a.held());
      const locking = t.db.kysely.transaction().execute(async (trx) => {
        await sql`select 1 from leases where name = 'stepped' for update`.execute(trx);
        await gate;
      });
      vi.spyOn(Date, 'now').mockImplementation(() => wall() - 600_000);
      await until('a reads unknown', () => a.unknown(), 3 * TTL);
      expect(a.held()).toBe(false);
      release();
      await locking;
    } finally {
      vi.restoreAllMocks();
      release();
      await a.stop();
    }
  });
});
