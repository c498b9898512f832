import { sql, type Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';
import { pruneLedger, pruneLedgerExclusively } from './ledger-prune.ts';

/**
 * 'claimed': the caller may send now. 'done': already sent, ack without sending.
 * 'in-flight': another holder's lease is still live; retry later.
 */
export type ClaimResult = 'claimed' | 'done' | 'in-flight';

/**
 * The delivery ledger keyed by pushId: a redelivered push that was already sent is acked without
 * sending, and two copies of one push in flight at once are not both sent.
 */
export interface DeliveryLedger {
  /** Claim many pushIds in one statement; a 'sending' claim older than leaseMs is taken over. */
  claim(pushIds: readonly string[], owner: string, leaseMs: number): Promise<Map<string, ClaimResult>>;
  /** Mark pushes done with their outcome (e.g. 'delivered', 'invalid-token'). */
  complete(entries: ReadonlyArray<{ pushId: string; outcome: string }>): Promise<void>;
  /** Drop this owner's 'sending' claims (the send failed and will be retried). */
  release(pushIds: readonly string[], owner: string): Promise<void>;
  /**
   * Restart the lease of this owner's 'sending' claims (a batch still at work: waiting for budget,
   * for a slow answer or for its outcome to be recorded), so no other pusher takes them over while
   * their owner lives. Returns how many claims were still this owner's.
   */
  renew(pushIds: readonly string[], owner: string): Promise<number>;
  /**
   * Delete entries finished (or abandoned while 'sending') before `olderThan`, in bounded batches.
   * `olderThan` must lie beyond the redelivery horizon; see ledger-prune.ts and ADR 0002.
   */
  prune(olderThan: Date, batchSize?: number): Promise<number>;
  /**
   * prune(), but only if no other process is pruning this schema's ledger (advisory lock);
   * undefined when another holds the lock. Stops between batches once `signal` is aborted.
   */
  pruneExclusively(olderThan: Date, batchSize?: number, signal?: AbortSignal): Promise<number | undefined>;
}

export function createDeliveryLedger(db: Kysely<HeraldTables>): DeliveryLedger {
  return {
    prune: (olderThan, batchSize) => pruneLedger(db, olderThan, batchSize),
    pruneExclusively: (olderThan, batchSize, signal) => pruneLedgerExclusively(db, olderThan, batchSize, signal),
    async claim(pushIds, owner, leaseMs) {
      const ids = [...new Set(pushIds.map((id) => id.toLowerCase()))];
      if (ids.length === 0) return new Map();
      // Rows are inserted in push_id order so concurrent overlapping claims cannot deadlock.
      // The outer select reads the snapshot from before the insert: a row a concurrent claimer
      // committed meanwhile is invisible there and so reads as 'in-flight', which is safe.
      const { rows } = await sql<{ push_id: string; result: ClaimResult }>`
        with input as (select unnest(${ids}::uuid[]) as push_id),
        claimed as (
          insert into delivery_ledger as l (push_id, state, owner, claimed_at)
          select push_id, 'sending', ${owner}, now() from input order by push_id
          on conflict (push_id) do update set owner = excluded.owner, claimed_at = excluded.claimed_at
          where l.state = 'sending' and l.claimed_at < now() - make_interval(secs => ${leaseMs / 1000})
          returning l.push_id
        )
        select i.push_id::text as push_id,
          case when c.push_id is not null then 'claimed' when l.state = 'done' then 'done' else 'in-flight' end as result
        from input i
        left join claimed c on c.push_id = i.push_id
        left join delivery_ledger l on l.push_id = i.push_id`.execute(db);
      const byId = new Map(rows.map((r) => [r.push_id, r.result]));
      return new Map(pushIds.map((id) => [id, byId.get(id.toLowerCase()) ?? 'in-flight']));
    },
    async complete(entries) {
      if (entries.length === 0) return;
      const last = new Map(entries.map((e) => [e.pushId, e.outcome]));
      await sql`
        update delivery_ledger l
        set state = 'done', outcome = i.outcome, completed_at = now()
        from unnest(${[...last.keys()]}::uuid[], ${[...last.values()]}::text[]) as i(push_id, outcome)
        where l.push_id = i.push_id`.execute(db);
    },
    async renew(pushIds, owner) {
      if (pushIds.length === 0) return 0;
      const result = await sql`
        update delivery_ledger set claimed_at = now()
        where push_id = any(${[...new Set(pushIds)]}::uuid[]) and state = 'sending' and owner = ${owner}`.execute(db);
      return Number(result.numAffectedRows ?? 0n);
    },
    async release(pushIds, owner) {
      if (pushIds.length === 0) return;
      await sql`
        delete from delivery_ledger
        where push_id = any(${[...new Set(pushIds)]}::uuid[]) and state = 'sending' and owner = ${owner}`.execute(db);
    },
  };
}
