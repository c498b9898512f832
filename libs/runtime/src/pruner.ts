import type { Logger } from '@herald/logging';
import { Counter, type Registry } from 'prom-client';

export interface PrunerDeps {
  /** The metrics' names, spelled out where they are chosen (so the Prometheus rules' check finds them). */
  metricNames: { runs: string; pruned: string };
  /** What is pruned, for people (logs, metric help): "delivery ledger", "jobs". */
  what: string;
  /**
   * Delete what is older than `olderThan`; undefined when another process holds the prune's lock.
   * `counted`, when the prune calls it, is told each batch's rows once committed, so a round failing
   * part-way counts what it deleted (what it returns beyond them is counted at its end).
   */
  prune(olderThan: Date, batchSize: number | undefined, signal: AbortSignal, counted: (rows: number) => void): Promise<number | undefined>;
  /** Time between prunes. */
  intervalMs: number;
  /**
   * Rows finished (or abandoned) longer ago than this are deleted, and the log says before when.
   * 'none' for a prune with no age bound (what it deletes is garbage whatever its age): it is given
   * the round's start, and its log names no cutoff.
   */
  retentionMs: number | 'none';
  /**
   * How the processes of a fleet share the prune. 'lock' (the default): under the prune's own lock,
   * one process a round, the others skipping it (their prune resolves undefined). 'skip-locked': no
   * lock; every process prunes every round, each statement skipping rows another holds (device-prune.ts):
   * no round is skipped.
   */
  sharing?: 'lock' | 'skip-locked';
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
 * prune's own lock, so one process of the fleet prunes at a time and the others skip that round;
 * or side by side, skipping each other's rows: `sharing`). A failed prune (database down) is logged
 * with the rows it had deleted and tried at the next round.
 */
export function startPruner(deps: PrunerDeps): Pruner {
  const metrics = prunerMetrics(deps);
  const now = deps.now ?? Date.now;
  const aborted = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const round = async (): Promise<void> => {
    const olderThan = new Date(now() - (deps.retentionMs === 'none' ? 0 : deps.retentionMs));
    const cutoff = deps.retentionMs === 'none' ? {} : { olderThan: olderThan.toISOString() };
    let counted = 0;
    const count = (rows: number): void => {
      counted += rows;
      metrics.pruned.inc(rows);
    };
    try {
      const pruned = await deps.prune(olderThan, deps.batchSize, aborted.signal, count);
      metrics.runs.inc({ result: pruned === undefined ? 'skipped' : 'pruned' });
      if (pruned !== undefined && pruned > counted) metrics.pruned.inc(pruned - counted);
      if (pruned === undefined) deps.logger.debug(`${deps.what} prune skipped: another process holds the lock`);
      else if (pruned > 0) deps.logger.info({ pruned, ...cutoff }, `${deps.what} pruned`);
    } catch (err) {
      metrics.runs.inc({ result: 'failed' });
      deps.logger.warn({ err, pruned: counted, ...cutoff }, `${deps.what} prune failed; trying again at the next round`);
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

function prunerMetrics(deps: Pick<PrunerDeps, 'metricNames' | 'what' | 'registry' | 'sharing'>) {
  const locked = deps.sharing !== 'skip-locked';
  const runs = new Counter({
    name: deps.metricNames.runs,
    help: locked
      ? `${deps.what} prune rounds: pruned (held the lock), skipped (another process held it), failed`
      : `${deps.what} prune rounds: pruned (every process prunes every round, skipping rows another holds: no lock), failed`,
    labelNames: ['result'],
    registers: [deps.registry],
  });
  // Every result from the start, at 0: a rule comparing them sees a series that never moved, not none.
  for (const result of locked ? ['pruned', 'skipped', 'failed'] : ['pruned', 'failed']) runs.inc({ result }, 0);
  return {
    runs,
    pruned: new Counter({ name: deps.metricNames.pruned, help: `${deps.what} rows deleted by pruning (as each batch commits, when the prune says so)`, registers: [deps.registry] }),
  };
}
