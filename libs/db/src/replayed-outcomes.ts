import { sql, type Kysely } from 'kysely';
import { isJobId, isUuidText } from '@herald/contracts';
import type { HeraldTables } from './tables.ts';

/** A device push a replay sent back to its send queue, as its parked body names it (replayParked's onReplayed). */
export interface ReplayedPushIds {
  pushId: string;
  jobId: string;
}

/**
 * A replay's clearing of its device pushes' `parked` / `failed` outcomes (marked `replayed`), so
 * their jobs count them in flight again until the pushers write their new outcomes (ADR 0009):
 * before, a job read `done` while its replayed pushes were being sent. Cleared after the copies are confirmed, never before
 * (a publish that fails leaves the push parked, and its outcome with it), and only rows written
 * before the replay began (PostgreSQL's clock): a copy parked again at once (its app still
 * disabled) keeps its new outcome. A delivered row is never touched, nor a push the ledger holds
 * as done: its pusher acks that copy as a duplicate and writes no outcome, so a cleared row would
 * read in flight for good.
 */
export interface ReplayedOutcomes {
  /** For replayParked's onReplayed: one statement a chunk; never rejects (a failure is kept in `failure`). */
  readonly onReplayed: (pushes: readonly ReplayedPushIds[]) => Promise<void>;
  /** How many outcome rows were cleared. */
  readonly cleared: number;
  /**
   * Why some replayed pushes still count as parked (the first failure, and how many pushes in all),
   * undefined when none does: until their new outcomes are written their jobs read them parked.
   */
  readonly failure: string | undefined;
}

/** Begins a replay's clearing: reads PostgreSQL's clock (the bound on which rows it clears); never rejects. */
export async function startReplayedOutcomes(db: Kysely<HeraldTables>): Promise<ReplayedOutcomes> {
  // As text: microseconds, as updated_at holds them (a Date keeps milliseconds).
  let since: string | undefined;
  let firstWhy: string | undefined;
  let cleared = 0;
  let notCleared = 0;
  const failed = (err: unknown, pushes: number): void => {
    firstWhy ??= err instanceof Error ? err.message : String(err);
    notCleared += pushes;
  };
  try {
    since = (await sql<{ now: string }>`select now()::text as now`.execute(db)).rows[0]?.now;
  } catch (err) {
    failed(err, 0);
  }
  return {
    onReplayed: async (pushes) => {
      const valid = pushes.filter((p) => isUuidText(p.pushId) && isJobId(p.jobId));
      if (valid.length === 0) return;
      if (since === undefined) return failed(firstWhy ?? 'no clock', valid.length);
      try {
        cleared += await clearReplayedOutcomes(db, valid, since);
      } catch (err) {
        failed(err, valid.length);
      }
    },
    get cleared() {
      return cleared;
    },
    get failure() {
      if (notCleared === 0) return undefined;
      return `the parked outcomes of ${notCleared} replayed push(es) could not be cleared (PostgreSQL: ${firstWhy}): their jobs count them parked, not in flight, until the pushers write their new outcomes`;
    },
  };
}

/**
 * Marks the `parked` / `failed` outcomes written before `since` of these pushes (those whose ledger
 * entry is not done) `replayed`: in flight again, their new outcomes to come (a delivery, or a park,
 * overwrites it). Marked, not deleted: a push of a parked fan-out chunk with no outcome row reads as
 * one that may never have been published (job-repository's parkedUnsent), so a deleted row made
 * its job read done while the replayed copy went round again. Locked in push_id order as the
 * pushers' upserts are; how many.
 */
export async function clearReplayedOutcomes(db: Kysely<HeraldTables>, pushes: readonly ReplayedPushIds[], since: Date | string): Promise<number> {
  if (pushes.length === 0) return 0;
  const result = await sql`
    with target as (
      select o.job_id, o.push_id
      from push_outcomes o
      join unnest(${pushes.map((p) => p.pushId)}::uuid[], ${pushes.map((p) => p.jobId)}::text[]) as i(push_id, job_id)
        on o.job_id = i.job_id and o.push_id = i.push_id
      where o.outcome in ('parked', 'failed') and o.updated_at < ${since}::timestamptz
        and not exists (select 1 from delivery_ledger l where l.push_id = o.push_id and l.state = 'done')
      order by o.push_id
      for update of o)
    update push_outcomes o set outcome = 'replayed', code = null, reason = ${REPLAYED_REASON}, provider_message_id = null, updated_at = now()
    from target t where o.job_id = t.job_id and o.push_id = t.push_id`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

/** The reason a replayed push's outcome row gives until its new outcome replaces it. */
export const REPLAYED_REASON = 'replayed from its parked queue by an operator: on its way again, its new outcome to come';
