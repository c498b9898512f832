import { randomUUID } from 'node:crypto';
import { LEDGER_PRUNE_LOCK_CLASS } from '@herald/db';
import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, waitFor, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLedgerRetention, startLedgerPruner } from './ledger-pruner.ts';

const logger = createLogger({ service: 'ledger-pruner-spec', level: 'silent', format: 'json' });
const HOUR = 3_600_000;
const RETENTION = 168 * HOUR;
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('pruner');
});
afterAll(() => t.drop());

/** Finished entries, `hoursAgo` old. */
async function entries(n: number, hoursAgo: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID());
  await t.db.ledger.claim(ids, 'pusher-1', 30_000);
  await t.db.ledger.complete(ids.map((pushId) => ({ pushId, outcome: 'delivered' })));
  const at = new Date(Date.now() - hoursAgo * HOUR);
  await t.db.kysely.updateTable('delivery_ledger').set({ claimed_at: at, completed_at: at }).where('push_id', 'in', ids).execute();
  return ids;
}
const left = async (ids: readonly string[]) =>
  (await t.db.kysely.selectFrom('delivery_ledger').select('push_id').where('push_id', 'in', [...ids]).execute()).length;

/** A running pruner and the value of its counters. */
function pruner(intervalMs: number) {
  const registry = new Registry();
  const p = startLedgerPruner({ ledger: t.db.ledger, intervalMs, retentionMs: RETENTION, batchSize: 7, firstDelayMs: 0, logger, registry });
  const runs = async (result: string) => (await registry.getSingleMetric('herald_ledger_prune_runs_total')?.get())?.values.find((v) => v.labels['result'] === result)?.value ?? 0;
  return { ...p, runs, registry };
}

describe('the ledger pruner a pusher runs', () => {
  it('deletes entries older than the retention every interval, in batches, and keeps recent ones', async () => {
    const old = await entries(30, 200);
    const recent = await entries(10, 100);
    const p = pruner(100);
    try {
      await waitFor('old entries pruned', async () => (await left(old)) === 0);
      expect(await left(recent)).toBe(10);
      // The round that deleted them must be over before the next entries age past the retention:
      // a round still looping over its batches would take them too, and only one round would count.
      await waitFor('the first round counted', async () => (await p.runs('pruned')) >= 1);
      const later = await entries(5, 170);
      await waitFor('entries that aged past the retention pruned at a later round', async () => (await left(later)) === 0);
      expect(await left(recent)).toBe(10);
      // A round is counted when it ends, which can be just after its deletes are visible.
      await waitFor('the later round counted', async () => (await p.runs('pruned')) >= 2);
      expect((await p.registry.getSingleMetric('herald_ledger_pruned_total')?.get())?.values[0]?.value).toBeGreaterThanOrEqual(35);
    } finally {
      await p.stop();
    }
  });

  it('skips its round while another pusher holds the prune lock, then prunes', async () => {
    const old = await entries(8, 200);
    await t.db.kysely.connection().execute(async (holder) => {
      const lock = (fn: string) =>
        holder.selectNoFrom((eb) => eb.fn(fn, [eb.val(LEDGER_PRUNE_LOCK_CLASS), eb.fn('hashtext', [eb.fn('current_schema', [])])]).as('r')).execute();
      await lock('pg_advisory_lock');
      const p = pruner(50);
      try {
        await waitFor('skipped rounds', async () => (await p.runs('skipped')) >= 2);
        expect(await left(old)).toBe(8);
        expect(await p.runs('pruned')).toBe(0);
        await lock('pg_advisory_unlock');
        await waitFor('pruned once the lock is free', async () => (await left(old)) === 0);
      } finally {
        await p.stop();
      }
    });
  });

  it('stops its timer on stop(): no round runs afterwards', async () => {
    const p = pruner(50);
    await waitFor('a first round', async () => (await p.runs('pruned')) >= 1);
    await p.stop();
    const after = await p.runs('pruned');
    const old = await entries(3, 200);
    await new Promise((r) => setTimeout(r, 300));
    expect(await p.runs('pruned')).toBe(after);
    expect(await left(old)).toBe(3);
  });

  it('refuses a retention shorter than the lease plus the retry schedule', () => {
    expect(() => checkLedgerRetention(HOUR, 30_000, [1000, 600_000, 3_000_000])).toThrow(/LEDGER_RETENTION_HOURS/);
    expect(() => checkLedgerRetention(RETENTION, 30_000, [1000, 5000, 30_000, 120_000, 600_000])).not.toThrow();
  });

  it('refuses a retention shorter than the lease, the retry schedule and the longest hold of a push whose provider is down', () => {
    const schedule = [1000, 5000, 30_000, 120_000, 600_000];
    // PROVIDER_DOWN_HOLD_MS 24 h and a held push's longest wait (24 minutes): 24 hours is not enough, 25 are.
    expect(() => checkLedgerRetention(24 * HOUR, 30_000, schedule, 24 * HOUR + 1_440_000)).toThrow(/PROVIDER_DOWN_HOLD_MS/);
    expect(() => checkLedgerRetention(24 * HOUR, 30_000, schedule, 0)).not.toThrow();
    expect(() => checkLedgerRetention(25 * HOUR, 30_000, schedule, 24 * HOUR + 1_440_000)).not.toThrow();
    expect(() => checkLedgerRetention(RETENTION, 30_000, schedule, 24 * HOUR + 1_440_000)).not.toThrow();
  });
});
