import { startPruner, type Pruner, type PrunerDeps } from '@herald/runtime';

export interface LedgerPrunerDeps extends Omit<PrunerDeps, 'metricNames' | 'what' | 'prune'> {
  ledger: { pruneExclusively(olderThan: Date, batchSize?: number, signal?: AbortSignal): Promise<number | undefined> };
}

/**
 * Every pusher runs one: every intervalMs it deletes ledger entries older than the retention, in
 * bounded batches, under an advisory lock so only one pusher of the fleet prunes at a time (the
 * others skip that round). A failed prune (database down) is logged and tried at the next round.
 */
export function startLedgerPruner(deps: LedgerPrunerDeps): Pruner {
  const { ledger, ...rest } = deps;
  return startPruner({
    ...rest,
    metricNames: { runs: 'herald_ledger_prune_runs_total', pruned: 'herald_ledger_pruned_total' },
    what: 'delivery ledger',
    prune: (olderThan, batchSize, signal) => ledger.pruneExclusively(olderThan, batchSize, signal),
  });
}

/**
 * Fail fast at start-up: an entry pruned while a copy of its push can still arrive would let
 * that copy be sent again. The retention must exceed the lease plus the whole retry schedule, plus
 * `holdMs` (the longest hold and a held push's longest wait) when pushes are held.
 */
export function checkLedgerRetention(retentionMs: number, leaseMs: number, retryDelaysMs: readonly number[], holdMs = 0): void {
  const horizonMs = leaseMs + retryDelaysMs.reduce((sum, d) => sum + d, 0);
  if (retentionMs <= horizonMs) {
    throw new Error(`LEDGER_RETENTION_HOURS (${retentionMs / 3_600_000} h) must exceed LEDGER_LEASE_MS plus the retry schedule (${horizonMs} ms)`);
  }
  // A push held while its provider is down (a copy of one delivered before among them) comes back up
  // to holdMs after it was due, and may then go round the retry schedule.
  if (holdMs > 0 && retentionMs <= horizonMs + holdMs) {
    throw new Error(`LEDGER_RETENTION_HOURS (${retentionMs / 3_600_000} h) must exceed LEDGER_LEASE_MS plus the retry schedule plus PROVIDER_DOWN_HOLD_MS and a held push's longest wait (${horizonMs + holdMs} ms)`);
  }
}
