import type { Logger } from '@herald/logging';
import { describe, expect, it } from 'vitest';
import { Registry } from './ops-server.ts';
import { startPruner, type PrunerDeps } from './pruner.ts';

type Line = { level: string; fields: Record<string, unknown>; msg: string };

/** The lines a pruner logs, as given (object first, message second). */
function recordingLogger(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (fields: Record<string, unknown> | string, msg?: string) =>
    void lines.push(typeof fields === 'string' ? { level, fields: {}, msg: fields } : { level, fields, msg: msg ?? '' });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger, lines };
}

/** One round of a pruner over `prune` (started at once, stopped after it), and what it left in its metrics and log. */
async function oneRound(deps: Pick<PrunerDeps, 'prune' | 'retentionMs' | 'sharing'>): Promise<{ metrics: string; lines: Line[] }> {
  const registry = new Registry();
  const { logger, lines } = recordingLogger();
  let ended!: () => void;
  const round = new Promise<void>((r) => {
    ended = r;
  });
  const pruner = startPruner({
    ...deps,
    prune: (...args) => deps.prune(...args).finally(ended),
    metricNames: { runs: 'spec_prune_runs_total', pruned: 'spec_pruned_total' },
    what: 'spec rows',
    intervalMs: 3_600_000,
    firstDelayMs: 0,
    logger,
    registry,
  });
  await round;
  await pruner.stop();
  return { metrics: await registry.metrics(), lines };
}

describe('a pruner whose processes share the work by skipping locked rows (no lock), with no age bound', () => {
  // Before, its help said "pruned (held the lock), skipped (another process held it)" of a prune
  // that takes no lock, its log named an `olderThan` of no meaning, and a round failing part-way
  // counted none of the rows its batches had deleted.
  it('counts the rows of each batch as it commits, so a round failing part-way counts them and says how many', async () => {
    const { metrics, lines } = await oneRound({
      retentionMs: 'none',
      sharing: 'skip-locked',
      prune: async (_start, _batchSize, _signal, counted) => {
        counted(100);
        counted(50);
        throw new Error('connection terminated');
      },
    });
    expect(metrics).toContain('\nspec_pruned_total 150\n');
    expect(metrics).toContain('spec_prune_runs_total{result="failed"} 1\n');
    expect(lines.filter((l) => l.level === 'warn').map((l) => ({ pruned: l.fields['pruned'], olderThan: l.fields['olderThan'], msg: l.msg }))).toEqual([
      { pruned: 150, olderThan: undefined, msg: 'spec rows prune failed; trying again at the next round' },
    ]);
  });

  it('says in its help that there is no lock and no skipped round, and logs no cutoff', async () => {
    const { metrics, lines } = await oneRound({ retentionMs: 'none', sharing: 'skip-locked', prune: () => Promise.resolve(7) });
    expect(metrics).toContain('# HELP spec_prune_runs_total spec rows prune rounds: pruned (every process prunes every round, skipping rows another holds: no lock), failed\n');
    expect(metrics).not.toContain('skipped');
    expect(metrics).toContain('spec_prune_runs_total{result="pruned"} 1\n');
    expect(metrics).toContain('\nspec_pruned_total 7\n');
    expect(lines.filter((l) => l.level === 'info')).toEqual([{ level: 'info', fields: { pruned: 7 }, msg: 'spec rows pruned' }]);
  });
});

describe('a pruner under its own lock with a retention (the default)', () => {
  it('keeps its help, its skipped rounds and its cutoff; rows a prune returns beyond those it counted are counted once', async () => {
    const { metrics, lines } = await oneRound({
      retentionMs: 60_000,
      prune: (_olderThan, _batchSize, _signal, counted) => {
        counted(30);
        return Promise.resolve(100);
      },
    });
    expect(metrics).toContain('# HELP spec_prune_runs_total spec rows prune rounds: pruned (held the lock), skipped (another process held it), failed\n');
    expect(metrics).toContain('spec_prune_runs_total{result="skipped"} 0\n');
    expect(metrics).toContain('\nspec_pruned_total 100\n');
    expect(lines.filter((l) => l.level === 'info').map((l) => [l.fields['pruned'], typeof l.fields['olderThan']])).toEqual([[100, 'string']]);
  });
});
