import type { ChaosPlan } from './chaos-plan.ts';
import type { FaultEvent } from './fault-injector.ts';
import type { Reconciliation } from './reconcile.ts';

export interface SummaryInputs {
  plan: ChaosPlan;
  result: Reconciliation;
  faults: readonly FaultEvent[];
  recovery: ReadonlyArray<{ kind: string; resumeMs: number | undefined; flowMs: number | undefined }>;
  parkedByCode: ReadonlyMap<string, number>;
  counters: ReadonlyMap<string, number>;
  deadTokens: number;
  durationMs: number;
  drained: boolean;
}

const n = (x: number): string => x.toLocaleString('en-US');
const s = (ms: number | undefined): string => (ms === undefined ? 'n/a' : `${(ms / 1000).toFixed(1)} s`);

function countBy(items: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const i of items) counts.set(i, (counts.get(i) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k} ×${v}`).join(', ');
}

function recoveryLine(recovery: ReadonlyArray<{ kind: string; ms: number | undefined }>): string {
  const byKind = new Map<string, Array<number | undefined>>();
  for (const r of recovery) byKind.set(r.kind, [...(byKind.get(r.kind) ?? []), r.ms]);
  return [...byKind]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, values]) => `${kind} ${values.map(s).join(' / ')}`)
    .join('; ');
}

/** The figures a reader of the chaos run wants, one fact a line. */
export function formatSummary(i: SummaryInputs): string {
  const { result: r, plan } = i;
  const moments = new Set(i.faults.map((f) => f.startedAt)).size;
  const dups = r.duplicates.length;
  const byCause = (cause: string | undefined) => r.duplicates.filter((d) => d.cause === cause).length;
  return [
    `chaos ${plan.form} form${plan.cluster ? ' on the three-node cluster' : ''} — seed ${plan.seed} (replay: CHAOS_SEED=${plan.seed}${plan.form === 'long' ? ' CHAOS_LONG=1' : ''}) — ${s(i.durationMs)}`,
    `  jobs ${n(plan.jobs.length)}, devices ${n(plan.devices.length)} (${i.deadTokens} dead: 410), device pushes expected ${n(r.expected)}`,
    `  faults: ${moments} moments, ${i.faults.length} injections: ${countBy(i.faults.map((f) => f.kind))}`,
    `  delivered ${n(r.delivered)} · parked ${n(r.parked)} (${r.parkedInsteadOfDelivered.length} of them meant for delivery) · expired ${n(r.expired)} · lost ${r.lost.length} · unexpected sends ${r.unexpected.length}`,
    `  duplicates ${dups}: ${byCause('pusher-killed')} after a pusher SIGKILL ≤ one lease after the first send, ${byCause('answer-lost')} after an answer the pusher never got (a timeout), ${byCause(undefined)} outside the documented window`,
    `  parked copies by code: ${[...i.parkedByCode].map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}`,
    `  back (fault → service running again / broker or database answering): ${recoveryLine(i.faults.map((f) => ({ kind: f.kind, ms: f.backAt - f.startedAt })))}`,
    `  deliveries resume (fault → next 200 on its platform, after it is back): ${recoveryLine(i.recovery.map((r) => ({ kind: r.kind, ms: r.resumeMs })))}`,
    `  new work flows (fault → first push of a job published / due after the fault, registration, invalidation): ${recoveryLine(i.recovery.map((r) => ({ kind: r.kind, ms: r.flowMs })))}`,
    `  counters summed over process lifetimes (lower bounds): ${[...i.counters].map(([k, v]) => `${k} ${n(v)}`).join(', ')}`,
    `  drained: ${i.drained ? 'yes' : 'NO (timed out)'}`,
  ].join('\n');
}
