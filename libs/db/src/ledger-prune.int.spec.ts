import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { LEDGER_PRUNE_LOCK_CLASS, pruneBatch } from './ledger-prune.ts';

const LEASE = 60_000;
let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('prune');
});
afterAll(() => t.drop());

const ids = (n: number) => Array.from({ length: n }, () => randomUUID());
/** Move entries back in time, as if they had been claimed and finished `hours` ago. */
const age = (pushIds: readonly string[], hours: number) =>
  sql`update delivery_ledger set claimed_at = claimed_at - make_interval(hours => ${hours}),
        completed_at = completed_at - make_interval(hours => ${hours})
      where push_id = any(${pushIds}::uuid[])`.execute(t.db.kysely);
const remaining = async (pushIds: readonly string[]) =>
  (await t.db.kysely.selectFrom('delivery_ledger').select('push_id').where('push_id', 'in', [...pushIds]).execute()).length;

describe('DeliveryLedger.prune', () => {
  it('deletes done and abandoned entries older than the horizon in batches, keeping newer ones and live claims', async () => {
    const oldDone = ids(25);
    const newDone = ids(5);
    const oldSending = ids(3);
    const liveSending = ids(2);
    const lateDone = ids(2);
    await t.db.ledger.claim([...oldDone, ...newDone, ...oldSending, ...liveSending, ...lateDone], 'pusher-1', LEASE);
    await t.db.ledger.complete([...oldDone, ...newDone].map((pushId) => ({ pushId, outcome: 'delivered' })));
    await age([...oldDone, ...oldSending, ...lateDone], 48);
    // Claimed before the horizon but done only now: the horizon runs from the completion.
    await t.db.ledger.complete(lateDone.map((pushId) => ({ pushId, outcome: 'delivered' })));

    const horizon = new Date(Date.now() - 24 * 3600_000);
    expect(await t.db.ledger.prune(horizon, 10)).toBe(28);
    expect(await remaining(oldDone)).toBe(0);
    expect(await remaining(oldSending)).toBe(0);
    expect(await remaining(newDone)).toBe(5);
    expect(await remaining(liveSending)).toBe(2);
    expect(await remaining(lateDone)).toBe(2);
    expect(await t.db.ledger.prune(horizon, 10)).toBe(0);
  });

  it('a pruned pushId is no longer known: only redeliveries within the horizon are deduplicated', async () => {
    const [kept, pruned] = ids(2) as [string, string];
    await t.db.ledger.claim([kept, pruned], 'pusher-1', LEASE);
    await t.db.ledger.complete([kept, pruned].map((pushId) => ({ pushId, outcome: 'delivered' })));
    await age([pruned], 48);
    await t.db.ledger.prune(new Date(Date.now() - 24 * 3600_000));
    const claims = await t.db.ledger.claim([kept, pruned], 'pusher-2', LEASE);
    expect(claims.get(kept)).toBe('done');
    expect(claims.get(pruned)).toBe('claimed');
  });

  it('walks an index rather than scanning the table', async () => {
    // One connection, so the session setting applies; a tiny table would otherwise be seq-scanned.
    const rows = await t.db.kysely.connection().execute(async (conn) => {
      await sql`set enable_seqscan = off`.execute(conn);
      return (await sql`explain ${pruneBatch(new Date(), 10)}`.execute(conn)).rows;
    });
    expect(JSON.stringify(rows)).toMatch(/Index Scan using delivery_ledger_claimed_at/);
  });
});

describe('DeliveryLedger.pruneExclusively', () => {
  const lockKey = sql`${LEDGER_PRUNE_LOCK_CLASS}::int, hashtext(current_schema())`;

  it('prunes nothing while another session holds the prune lock, and prunes once it is released', async () => {
    const old = ids(12);
    await t.db.ledger.claim(old, 'pusher-1', LEASE);
    await t.db.ledger.complete(old.map((pushId) => ({ pushId, outcome: 'delivered' })));
    await age(old, 48);
    const horizon = new Date(Date.now() - 24 * 3600_000);
    await t.db.kysely.connection().execute(async (holder) => {
      await sql`select pg_advisory_lock(${lockKey})`.execute(holder);
      try {
        expect(await t.db.ledger.pruneExclusively(horizon, 5)).toBeUndefined();
        expect(await remaining(old)).toBe(12);
      } finally {
        await sql`select pg_advisory_unlock(${lockKey})`.execute(holder);
      }
    });
    expect(await t.db.ledger.pruneExclusively(horizon, 5)).toBe(12);
    expect(await remaining(old)).toBe(0);
  });

  it('releases the lock when it is done, so the next prune (from any session) can take it', async () => {
    const old = ids(3);
    await t.db.ledger.claim(old, 'pusher-1', LEASE);
    await t.db.ledger.complete(old.map((pushId) => ({ pushId, outcome: 'delivered' })));
    await age(old, 48);
    expect(await t.db.ledger.pruneExclusively(new Date(Date.now() - 24 * 3600_000), 100)).toBe(3);
    const { rows } = await sql<{ n: string }>`
      select count(*) as n from pg_locks where locktype = 'advisory' and classid = ${LEDGER_PRUNE_LOCK_CLASS}
        and objid = hashtext(current_schema())::oid and objsubid = 2`.execute(t.db.kysely);
    expect(rows[0]?.n).toBe('0');
    const taken = await t.db.kysely.connection().execute(async (other) => {
      const r = await sql<{ ok: boolean }>`select pg_try_advisory_lock(${lockKey}) as ok`.execute(other);
      await sql`select pg_advisory_unlock(${lockKey})`.execute(other);
      return r.rows[0]?.ok;
    });
    expect(taken).toBe(true);
  });

  it('two processes pruning at once delete every old entry exactly once between them', async () => {
    const old = ids(40);
    await t.db.ledger.claim(old, 'pusher-1', LEASE);
    await t.db.ledger.complete(old.map((pushId) => ({ pushId, outcome: 'delivered' })));
    await age(old, 48);
    const horizon = new Date(Date.now() - 24 * 3600_000);
    const results = await Promise.all([t.db.ledger.pruneExclusively(horizon, 5), t.db.ledger.pruneExclusively(horizon, 5)]);
    expect(results.reduce<number>((sum, n) => sum + (n ?? 0), 0)).toBe(40);
    expect(await remaining(old)).toBe(0);
  });
});
