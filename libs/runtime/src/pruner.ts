import type { Logger } from '@herald/logging';
import { Counter, type Registry } from 'prom-client';

export interface PrunerDeps {
  /** The metrics' names, spelled out where they are chosen (so the Prometheus rules' check finds them). */
  metricNames: { runs: string; pruned: string };
  /** What is pruned, for people (logs, metric help): "delivery ledger", "jobs". */
  what: string;
  /** Delete what is older than `olderThan`; undefined when another process holds the prune's lock. */
  prune(olderThan: Date, batchSize: number | undefined, signal: AbortSignal): Promise<number | undefined>;
  /** Time between prunes. */
  intervalMs: number;
  /** Rows finished (or abandoned) longer ago than this are deleted. */
  retentionMs: number;
  /** Rows (or jobs) per delete statement. */
  batchSize?: number;
  /** Delay before the first prune; default a random part of min(intervalMs, 1 min), so a fleet spreads out. */
  firstDelayMs?: number;
  logger: Logger;
  registry: Registry;
  now?: () => number;
}

export interface Pruner {
  /** Clear the timer and stop a prune in progress after its current batch. */
  stop(): Promise<void>;
}

/**
 * Every intervalMs, prune what is older than the retention, in bounded batches (under the
 * prune's own lock, so one process of the fleet prunes at a time and the others skip that round).
 * A failed prune (database down) is logged and tried at the next round.
 */
export function startPruner(deps: PrunerDeps): Pruner {
  const metrics = prunerMetrics(deps);
  const now = deps.now ?? Date.now;
  const aborted = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const round = async (): Promise<void> => {
    const olderThan = new Date(now() - deps.retentionMs);
    try {
      const pruned = await deps.prune(olderThan, deps.batchSize, aborted.signal);
      metrics.runs.inc({ result: pruned === undefined ? 'skipped' : 'pruned' });
      if (pruned !== undefined) metrics.pruned.inc(pruned);
      if (pruned === undefined) deps.logger.debug(`${deps.what} prune skipped: another process holds the lock`);
      else if (pruned > 0) deps.logger.info({ pruned, olderThan: olderThan.toISOString() }, `${deps.what} pruned`);
    } catch (err) {
      metrics.runs.inc({ result: 'failed' });
      deps.logger.warn({ err }, `${deps.what} prune failed; trying again at the next round`);
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

function prunerMetrics(deps: Pick<PrunerDeps, 'metricNames' | 'what' | 'registry'>) {
  const runs = new Counter({
    name: deps.metricNames.runs,
    help: `${deps.what} prune rounds: pruned (held the lock), skipped (another process held it), failed`,
    labelNames: ['result'],
    registers: [deps.registry],
  });
  // Every result from the start, at 0: a rule comparing them sees a series that never moved, not none.
  for (const result of ['pruned', 'skipped', 'failed']) runs.inc({ result }, 0);
  return {
    runs,
    pruned: new Counter({ name: deps.metricNames.pruned, help: `${deps.what} rows deleted by pruning`, registers: [deps.registry] }),
  };
}
