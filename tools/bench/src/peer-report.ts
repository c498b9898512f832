/** The tables `npm run bench:peer` prints: CPU µs per delivered push per process, Herald beside the adapter. */
import { formatMachine, medianShares, type MachineShares } from './proc.ts';
import { median } from './stats.ts';

export interface Measured {
  pushesPerSecond: number;
  delivered: number;
  seconds: number;
  /** CPU µs per delivered push (APNs and FCM together) over the measured window, by process. */
  cpuUsPerPush: Record<string, number>;
  /** CPU µs per push of processes the run does not use (RabbitMQ, PostgreSQL during the adapter's run): other work on the machine. */
  ambientUsPerPush?: Record<string, number>;
  /** The machine's idle and stolen shares over the same window. */
  machine: MachineShares;
}

const total = (cpu: Record<string, number>): number => Object.values(cpu).reduce((a, b) => a + b, 0);

/** Process names in a stable order: Herald's first (as started), then the adapter's own. */
const processNames = (herald: Record<string, number>, adapter: Record<string, number>): string[] => [...new Set([...Object.keys(herald), ...Object.keys(adapter)])];

function table(title: string, herald: Record<string, number>, adapter: Record<string, number>): string {
  const cell = (v: number | undefined): string => (v === undefined ? '—' : String(Math.round(v))).padStart(14);
  const lines = [`${title.padEnd(40)}${'herald'.padStart(14)}${'parse-adapter'.padStart(14)}`];
  for (const name of processNames(herald, adapter)) lines.push(`  ${name.padEnd(38)}${cell(herald[name])}${cell(adapter[name])}`);
  lines.push(`  ${'total'.padEnd(38)}${cell(total(herald))}${cell(total(adapter))}`);
  return lines.join('\n');
}

/** One round: CPU µs per delivered push per process, both sides. */
export function formatCpuTable(round: string, herald: Measured, adapter: Measured): string {
  const lines = [table(`${round}: CPU µs per delivered push`, herald.cpuUsPerPush, adapter.cpuUsPerPush)];
  const ambient = Object.entries(adapter.ambientUsPerPush ?? {});
  if (ambient.length > 0) lines.push(`  (not counted: during the adapter's run, unused by it, ${ambient.map(([n, v]) => `${n} ${v}`).join(', ')} µs per push — other work on this machine)`);
  return lines.join('\n');
}

const medianCpu = (ms: Measured[]): Record<string, number> => {
  const names = [...new Set(ms.flatMap((m) => Object.keys(m.cpuUsPerPush)))];
  return Object.fromEntries(names.map((n) => [n, median(ms.map((m) => m.cpuUsPerPush[n] ?? NaN))]));
};

/** Medians over the rounds, and — where Herald spends more — which processes ate the difference. */
export function formatSummary(rounds: { adapter: Measured; herald: Measured }[]): string {
  const heraldRate = median(rounds.map((r) => r.herald.pushesPerSecond));
  const adapterRate = median(rounds.map((r) => r.adapter.pushesPerSecond));
  const h = medianCpu(rounds.map((r) => r.herald));
  const a = medianCpu(rounds.map((r) => r.adapter));
  const lines = [
    `medians of ${rounds.length} rounds: herald ${heraldRate} pushes/s (${formatMachine(medianShares(rounds.map((r) => r.herald.machine)))}), parse-adapter ${adapterRate} pushes/s (${formatMachine(medianShares(rounds.map((r) => r.adapter.machine)))})`,
    table('median CPU µs per delivered push', h, a),
  ];
  const extra = processNames(h, a)
    .map((name) => ({ name, diff: (h[name] ?? 0) - (a[name] ?? 0) }))
    .filter((d) => d.diff > 0)
    .sort((x, y) => y.diff - x.diff);
  const gap = total(h) - total(a);
  if (heraldRate < adapterRate || gap > 0) {
    lines.push(
      `herald spends ${Math.round(gap)} µs more CPU per push than the adapter (${Math.round(total(h))} vs ${Math.round(total(a))}); where it goes: ` +
        extra.map((d) => `${d.name} +${Math.round(d.diff)}`).join(', '),
    );
  }
  return lines.join('\n');
}
