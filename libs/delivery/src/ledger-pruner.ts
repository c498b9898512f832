import type { Logger } from '@herald/logging';
import { Counter, type Registry } from '@herald/runtime';

export interface LedgerPrunerDeps {
  ledger: { pruneExclusively(olderThan: Date, batchSize?: number, signal?: AbortSignal): Promise<number | undefined> };
  /** Time between prunes. */
  intervalMs: number;
  /** Entries finished (or abandoned) longer ago than this are deleted. */
  retentionMs: number;
  /** Rows per delete statement. */
  batchSize?: number;
  /** Delay before the first prune; default a random part of min(intervalMs, 1 min), so a fleet spreads out. */
  firstDelayMs?: number;
  logger: Logger;
  registry: Registry;
  now?: () => number;
}

export interface LedgerPruner {
  /** Clear the timer and stop a prune in progress after its current batch. */
  stop(): Promise<void>;
}

/**
 * Every pusher runs one: every intervalMs it deletes ledger entries older than the retention, in
 * bounded batches, under an advisory lock so only one pusher of the fleet prunes at a time (the
 * others skip that round). A failed prune (database down) is logged and tried at the next round.
 */
export function startLedgerPruner(deps: LedgerPrunerDeps): LedgerPruner {
  const metrics = prunerMetrics(deps.registry);
  const now = deps.now ?? Date.now;
  const aborted = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const round = async (): Promise<void> => {
    const olderThan = new Date(now() - deps.retentionMs);
    try {
      const pruned = await deps.ledger.pruneExclusively(olderThan, deps.batchSize, aborted.signal);
      metrics.runs.inc({ result: pruned === undefined ? 'skipped' : 'pruned' });
      if (pruned !== undefined) metrics.pruned.inc(pruned);
      if (pruned === undefined) deps.logger.debug('ledger prune skipped: another pusher holds the lock');
      else if (pruned > 0) deps.logger.info({ pruned, olderThan: olderThan.toISOString() }, 'delivery ledger pruned');
    } catch (err) {
      metrics.runs.inc({ result: 'failed' });
      deps.logger.warn({ err }, 'delivery ledger prune failed; trying again at the next round');
    }
  };
  const schedule = (delayMs: number): void => {
    timer = setTimeout(() => {
      running = round().finally(() => {
        if (!aborted.signal.aborted) schedule(deps.intervalMs);
      });
    }, delayMs);
  };
  schedule(deps.firstDelayMs ?? Math.random() * Math.min(deps.intervalMs, 60_000));
  return {
    stop: async () => {
      aborted.abort();
      clearTimeout(timer);
      await running;
    },
  };
}

/**
 * Fail fast at start-up: an entry pruned while a copy of its push can still arrive would let
 * that copy be sent again. The retention must exceed the lease plus the whole retry schedule.
 */
export function checkLedgerRetention(retentionMs: number, leaseMs: number, retryDelaysMs: readonly number[]): void {
  const horizonMs = leaseMs + retryDelaysMs.reduce((sum, d) => sum + d, 0);
  if (retentionMs <= horizonMs) {
    throw new Error(`LEDGER_RETENTION_HOURS (${retentionMs / 3_600_000} h) must exceed LEDGER_LEASE_MS plus the retry schedule (${horizonMs} ms)`);
  }
}

function prunerMetrics(registry: Registry) {
  const runs = new Counter({
    name: 'herald_ledger_prune_runs_total',
    help: 'Ledger prune rounds: pruned (held the lock), skipped (another pusher held it), failed',
    labelNames: ['result'],
    registers: [registry],
  });
  // Every result from the start, at 0: a rule comparing them (HeraldLedgerPruneFailing) sees a
  // series that never moved, not none.
  for (const result of ['pruned', 'skipped', 'failed']) runs.inc({ result }, 0);
  return {
    runs,
    pruned: new Counter({ name: 'herald_ledger_pruned_total', help: 'Delivery-ledger entries deleted by pruning', registers: [registry] }),
  };
}
