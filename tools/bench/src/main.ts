/**
 * `npm run bench`: the end-to-end benchmark. Starts the whole system (own vhost, schema, and the
 * sandbox as a process of its own), seeds BENCH_USERS users with one APNs and one FCM device each,
 * then publishes jobs of one user (two device pushes) for BENCH_SECONDS after a
 * BENCH_WARMUP_SECONDS warm-up — at BENCH_RATE device pushes/s, or as fast as the system delivers
 * (at most BENCH_MAX_BACKLOG device pushes published and not yet answered: BacklogGate). It
 * measures at the sandbox: delivered pushes/s over the measured window, latency publish → sandbox
 * receipt (p50/p95/p99), the CPU budget (CPU µs per delivered device push of every process over the
 * measured window, from /proc: each Herald service, RabbitMQ, PostgreSQL, the sandbox, the load
 * generator) and the peak RSS of every process. Prints a table, writes test-results/bench.json,
 * cleans up. BENCH_RUNS runs (default 1) are summarised by their medians, row by row.
 * BENCH_PROVIDER_DELAY_MS makes the sandbox hold every APNs and FCM answer that long, as a
 * provider that far away would (unset: it answers at once); the latency then includes it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { BacklogGate, publishBenchJobs, seedBenchDevices } from './bench-load.ts';
import { sandboxRecordsAfter, sandboxStats, sandboxTotals } from './sandbox-feed.ts';
import { buildServices } from '../../../infra/local/build-services.ts';
import { injectFault } from '../../../test/support/sandbox-client.ts';
import { cpuProfileEnv } from '../../../test/support/service-process.ts';
import type { SandboxProcess } from '../../../test/support/sandbox-process.ts';
import { sandboxProcessOf, startSystem, type System } from '../../../test/support/system.ts';
import { cpuSpentMs, formatMachine, listenerOf, localPortsByPid, machineCpu, machineShares, medianShares, peakRssMb, postgresBackends, processTree, sampleCpu, type CpuRow, type CpuSample, type MachineCpu, type MachineShares } from './proc.ts';
import { benchWebProvider, failureNote, webBenchOptions } from './web-provider-bench.ts';
import { percentile, wholeMedian } from './stats.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const USERS = env('BENCH_USERS', 20_000);
const SECONDS = env('BENCH_SECONDS', 60);
const WARMUP = env('BENCH_WARMUP_SECONDS', 10);
const RATE = process.env['BENCH_RATE'] === undefined ? undefined : env('BENCH_RATE', 2000);
const RUNS = env('BENCH_RUNS', 1);
const CONCURRENCY = env('BENCH_PUBLISH_CONCURRENCY', 64);
/** At max rate: device pushes published and not yet answered by the sandbox, at most (0: no bound). */
const MAX_BACKLOG = env('BENCH_MAX_BACKLOG', 6_000);
/** A provider's round trip, played by the sandbox (0: none). */
const PROVIDER_DELAY_MS = env('BENCH_PROVIDER_DELAY_MS', 0);
const PROVIDERS_AWAY = PROVIDER_DELAY_MS > 0 ? `, providers ${PROVIDER_DELAY_MS} ms away` : '';

/** Rows of the CPU budget that are not one Herald service, in print order. */
const RABBITMQ = 'rabbitmq (beam.smp + children)';
/** PostgreSQL's backends by whom they serve: these services' own rows, the rest of Herald together, the bench process. */
const PG_FOR = ['demuxer', 'apns-pusher', 'fcm-pusher'] as const;
const pgRow = (client: string): string => `postgresql ← ${client}`;
const PG_HERALD_OTHER = pgRow('other Herald services');
const PG_LOADGEN = pgRow('bench process (seeding, none while measuring)');
const PG_SERVER = 'postgresql (server: wal writer, checkpointer, …)';
const SANDBOX = 'sandbox (own process)';
const LOADGEN = 'load generator (bench process)';
/** Shown, not counted: other work on this machine meanwhile. */
const PG_OTHERS = 'postgresql (other clients, not counted)';

interface RunResult {
  offered: string;
  deliveredPerSecond: number;
  p50: number;
  p95: number;
  p99: number;
  /** Peak RSS of each Herald service, the sandbox and the load generator, MB. */
  peakRssMb: Record<string, number>;
  /** CPU µs per delivered device push over the measured window, one row per process (group), plus `total` and `herald services`. */
  cpuUsPerPush: Record<string, number>;
  /** The pushers' figures per push of their own platform (every bench job is one APNs and one FCM push), as earlier benches printed them. */
  cpuUsPerPlatformPush: Record<string, number>;
  /** The machine's idle and stolen shares over the measured window. */
  machine: MachineShares;
}

const portOf = (url: string, fallback: number): number => Number(new URL(url).port || fallback);

/** The processes of the CPU budget: every Herald service, RabbitMQ, PostgreSQL (by whose backend), the sandbox, the bench process. */
function cpuRows(sys: System, sandbox: SandboxProcess): CpuRow[] {
  const amqpPort = portOf(sys.env['AMQP_URL'] ?? '', 5672);
  const pgPort = portOf(sys.env['DATABASE_URL'] ?? '', 5432);
  const beam = listenerOf(amqpPort);
  // Which backend serves whom, read once per sample (the first PostgreSQL row asks, the others reuse it).
  let pg: Map<string, number[]> | undefined;
  const postgres = (row: string, first = false) => (): number[] => {
    if (first || pg === undefined) pg = postgresByClient(sys, pgPort);
    return pg.get(row) ?? [];
  };
  return [
    ...[...sys.services].map(([name, s]) => ({ name, pids: () => (s.pid === undefined ? [] : [s.pid]) })),
    { name: RABBITMQ, pids: () => (beam === undefined ? [] : processTree(beam)) },
    ...PG_FOR.map((name, i) => ({ name: pgRow(name), pids: postgres(pgRow(name), i === 0) })),
    { name: PG_HERALD_OTHER, pids: postgres(PG_HERALD_OTHER) },
    { name: PG_LOADGEN, pids: postgres(PG_LOADGEN) },
    { name: PG_SERVER, pids: postgres(PG_SERVER) },
    { name: PG_OTHERS, pids: postgres(PG_OTHERS) },
    { name: SANDBOX, pids: () => (sandbox.child.pid === undefined ? [] : processTree(sandbox.child.pid)) },
    { name: LOADGEN, pids: () => [process.pid] },
  ];
}

/** PostgreSQL's processes by row: each backend goes to the row of the process holding its client end. */
function postgresByClient(sys: System, pgPort: number): Map<string, number[]> {
  const clients = new Map<number, string>([[process.pid, PG_LOADGEN]]);
  for (const [name, s] of sys.services) {
    if (s.pid !== undefined) clients.set(s.pid, (PG_FOR as readonly string[]).includes(name) ? pgRow(name) : PG_HERALD_OTHER);
  }
  const rowOfPort = new Map<number, string>();
  for (const [pid, ports] of localPortsByPid([...clients.keys()])) for (const port of ports) rowOfPort.set(port, clients.get(pid) as string);
  const { backends, server } = postgresBackends(pgPort);
  const rows = new Map<string, number[]>([[PG_SERVER, server]]);
  for (const [pid, clientPort] of backends) {
    const row = rowOfPort.get(clientPort) ?? PG_OTHERS;
    rows.set(row, [...(rows.get(row) ?? []), pid]);
  }
  return rows;
}

function cpuBudget(sys: System, from: CpuSample, to: CpuSample, delivered: number): Pick<RunResult, 'cpuUsPerPush' | 'cpuUsPerPlatformPush'> {
  const spent = cpuSpentMs(from, to);
  const us = (ms: number, pushes = delivered): number => Math.round((ms * 1000) / pushes);
  const rows: Record<string, number> = {};
  let herald = 0;
  let total = 0;
  for (const [name, ms] of spent) {
    rows[name] = us(ms);
    if (name === PG_OTHERS) continue;
    total += ms;
    if (sys.services.has(name)) herald += ms;
  }
  rows['herald services'] = us(herald);
  rows['total'] = us(total);
  const perPlatform = (name: string): number => us(spent.get(name) ?? NaN, delivered / 2);
  return { cpuUsPerPush: rows, cpuUsPerPlatformPush: { 'apns-pusher': perPlatform('apns-pusher'), 'fcm-pusher': perPlatform('fcm-pusher') } };
}

function peakRss(sys: System, sandbox: SandboxProcess): Record<string, number> {
  return {
    ...Object.fromEntries([...sys.services].map(([name, s]) => [name, peakRssMb(s.pid)])),
    [SANDBOX]: peakRssMb(sandbox.child.pid),
    [LOADGEN]: peakRssMb(process.pid),
  };
}

async function run(): Promise<RunResult> {
  // BENCH_CPU_PROFILE_DIR: every service, and the sandbox, writes a V8 CPU profile there when it stops (see
  // tools/bench/src/profile-summary.ts to read them).
  const profiling = cpuProfileEnv(process.env['BENCH_CPU_PROFILE_DIR']);
  await buildServices();
  let sys: System | undefined;
  try {
    sys = await startSystem({ env: { LOG_LEVEL: 'info', APP_CACHE_TTL_MS: '5000', ...profiling }, sandboxProcess: { nodeFlags: profiling['HERALD_SERVICE_NODE_ARGS'] ?? '' } });
    const sandbox = sandboxProcessOf(sys);
    const feed = { settings: { control: { url: sandbox.controlUrl } } };
    if (PROVIDER_DELAY_MS > 0) {
      for (const platform of ['apns', 'fcm']) await injectFault(feed, { platform, fraction: 1, delayMs: PROVIDER_DELAY_MS });
    }
    await seedBenchDevices(sys, USERS);
    const rows = cpuRows(sys, sandbox);
    const counter = { n: 0 };
    const measureFrom = Date.now() + WARMUP * 1000;
    const measureTo = measureFrom + SECONDS * 1000;
    const runStarted = Date.now();
    // At max rate the load follows what is delivered (BacklogGate): the sandbox's answered count,
    // streamed every 50 ms, lets the publishers through.
    const backlog = RATE === undefined && MAX_BACKLOG > 0 ? new BacklogGate(MAX_BACKLOG) : undefined;
    let countsFailed: Error | undefined;
    const answered =
      backlog === undefined
        ? undefined
        : sandboxTotals(feed, 50, (total) => backlog.refresh(total), (err) => {
            countsFailed = err;
            backlog.open();
          });
    const publishing = publishBenchJobs(sys, {
      users: USERS,
      done: () => Date.now() >= measureTo,
      ...(RATE === undefined ? {} : { rate: RATE }),
      ...(backlog === undefined ? {} : { backlog }),
      concurrency: CONCURRENCY,
      counter,
      idPrefix: `bench-${runStarted}`,
    }).finally(() => {
      answered?.close();
      backlog?.open();
    });
    const latencies: number[] = [];
    let delivered = 0;
    let cursor = 0;
    let cpuFrom: CpuSample | undefined;
    let cpuTo: CpuSample | undefined;
    let machineFrom: MachineCpu | undefined;
    let machineTo: MachineCpu | undefined;
    while (Date.now() < measureTo + 2000) {
      // Samples land within a few ms of the window's edges (the records are read after).
      const next = cpuFrom === undefined ? measureFrom : cpuTo === undefined ? measureTo : Date.now() + 1000;
      await new Promise((r) => setTimeout(r, Math.max(0, Math.min(1000, next - Date.now()))));
      if (cpuFrom === undefined && Date.now() >= measureFrom) [cpuFrom, machineFrom] = [sampleCpu(rows), machineCpu()];
      if (cpuTo === undefined && Date.now() >= measureTo) [cpuTo, machineTo] = [sampleCpu(rows), machineCpu()];
      const batch = await sandboxRecordsAfter(feed, cursor);
      for (const r of batch) {
        cursor = Math.max(cursor, r.seq);
        const at = Date.parse(r.receivedAt);
        if (r.status !== 200 || at < measureFrom || at >= measureTo) continue;
        delivered++;
        if (r.t !== undefined) latencies.push(at - r.t);
      }
    }
    await publishing;
    if (countsFailed !== undefined) throw new Error(`the backlog gate lost the sandbox's count, so the load was not held at what was delivered: ${countsFailed.message}`);
    latencies.sort((a, b) => a - b);
    const stats = await sandboxStats(feed);
    const fcm = stats.fcmConnections;
    console.log(`  published ${counter.n} jobs, sandbox answered ${stats.total} requests${fcm === undefined ? '' : ` (FCM connections: ${fcm.direct} direct, ${fcm.filtered} through its :scheme filter)`}`);
    const budget = cpuFrom !== undefined && cpuTo !== undefined ? cpuBudget(sys, cpuFrom, cpuTo, delivered) : { cpuUsPerPush: {}, cpuUsPerPlatformPush: {} };
    return {
      offered: `${RATE === undefined ? 'max' : `${RATE}/s`}${PROVIDERS_AWAY}`,
      deliveredPerSecond: Math.round(delivered / SECONDS),
      p50: percentile(latencies, 50),
      p95: percentile(latencies, 95),
      p99: percentile(latencies, 99),
      peakRssMb: peakRss(sys, sandbox),
      ...budget,
      machine: machineFrom !== undefined && machineTo !== undefined ? machineShares(machineFrom, machineTo) : { idlePercent: NaN, stealPercent: NaN },
    };
  } finally {
    await sys?.stop();
  }
}

const medianRow = (rs: RunResult[], pick: (r: RunResult) => Record<string, number>): Record<string, number> =>
  Object.fromEntries([...new Set(rs.flatMap((r) => Object.keys(pick(r))))].map((k) => [k, wholeMedian(rs.map((r) => pick(r)[k] ?? NaN))]));

/** One row per process, the same rows in the same order every time, so the next change shows where CPU moved. */
function budgetTable(title: string, cpu: Record<string, number>, rss: Record<string, number>): string {
  const total = cpu['total'] ?? NaN;
  const lines = [title, `  ${'process'.padEnd(50)} ${'µs/push'.padStart(8)} ${'share'.padStart(6)} ${'peak RSS MB'.padStart(12)}`];
  for (const [name, us] of Object.entries(cpu)) {
    if (name === 'herald services' || name === 'total') continue;
    const share = name === PG_OTHERS ? '' : `${((100 * us) / total).toFixed(0)}%`;
    lines.push(`  ${name.padEnd(50)} ${String(us).padStart(8)} ${share.padStart(6)} ${String(rss[name] ?? '').padStart(12)}`);
  }
  lines.push(`  ${'herald services (subtotal)'.padEnd(50)} ${String(cpu['herald services']).padStart(8)} ${`${((100 * (cpu['herald services'] ?? NaN)) / total).toFixed(0)}%`.padStart(6)}`);
  lines.push(`  ${'total (every counted process)'.padEnd(50)} ${String(total).padStart(8)}`);
  return lines.join('\n');
}

const results: RunResult[] = [];
for (let i = 0; i < RUNS; i++) {
  const r = await run();
  results.push(r);
  console.log(`run ${i + 1} (${r.offered}): ${r.deliveredPerSecond} pushes/s delivered; latency p50 ${r.p50} ms, p95 ${r.p95} ms, p99 ${r.p99} ms; ${formatMachine(r.machine)}`);
  console.log(budgetTable(`run ${i + 1}: CPU µs per delivered device push over the measured window`, r.cpuUsPerPush, r.peakRssMb));
}
const cpuMedian = medianRow(results, (r) => r.cpuUsPerPush);
const rssMedian = medianRow(results, (r) => r.peakRssMb);
const summary = {
  date: new Date().toISOString(),
  machine: '2 cores, everything local (RabbitMQ, PostgreSQL, the sandbox in its own process, the load generator)',
  users: USERS,
  seconds: SECONDS,
  offered: RATE === undefined ? 'max' : RATE,
  providerDelayMs: PROVIDER_DELAY_MS,
  runs: results,
  median: {
    deliveredPerSecond: wholeMedian(results.map((r) => r.deliveredPerSecond)),
    p50: wholeMedian(results.map((r) => r.p50)),
    p95: wholeMedian(results.map((r) => r.p95)),
    p99: wholeMedian(results.map((r) => r.p99)),
    cpuUsPerPush: cpuMedian,
    cpuUsPerPlatformPush: medianRow(results, (r) => r.cpuUsPerPlatformPush),
    peakRssMb: rssMedian,
    machine: medianShares(results.map((r) => r.machine)),
  },
};
// Web Push (issue 21): the provider's own figure, web pushes/s to the sandbox's push service (decrypting each).
const web = await benchWebProvider(webBenchOptions());
console.log(`web provider → sandbox: ${web.webPushesPerSecond} web pushes/s (${web.sent} delivered, ${web.failed} failed, concurrency ${web.concurrency}${failureNote(web)})`);
Object.assign(summary, { web });
const m = summary.median;
console.log(`\nmedian of ${RUNS} run(s) (${summary.offered === 'max' ? 'max' : `${RATE}/s offered`}${PROVIDERS_AWAY}): ${m.deliveredPerSecond} pushes/s delivered; latency p50 ${m.p50} ms, p95 ${m.p95} ms, p99 ${m.p99} ms; ${formatMachine(m.machine)}`);
console.log(budgetTable(`median CPU µs per delivered device push, per process (${RUNS} run(s))`, cpuMedian, rssMedian));
console.log(`pushers per push of their own platform: ${JSON.stringify(m.cpuUsPerPlatformPush)}`);
mkdirSync('test-results', { recursive: true });
writeFileSync('test-results/bench.json', JSON.stringify(summary, null, 2));
writeFileSync(`test-results/bench-${RATE ?? 'max'}.json`, JSON.stringify(summary, null, 2));
