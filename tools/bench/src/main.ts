/**
 * `npm run bench`: the end-to-end benchmark. Starts the whole system (own vhost, schema and
 * sandbox), seeds BENCH_USERS users with one APNs and one FCM device each, then publishes jobs
 * of one user (two device pushes) for BENCH_SECONDS after a BENCH_WARMUP_SECONDS warm-up —
 * as fast as confirms allow, or at BENCH_RATE device pushes/s. It measures at the sandbox:
 * delivered pushes/s over the measured window, latency publish → sandbox receipt (p50/p95/p99),
 * and the peak RSS of every service. Prints a table, writes test-results/bench.json, cleans up.
 * BENCH_RUNS runs (default 1) are summarised by their medians.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { sandboxStats, sandboxRecordsAfter } from './sandbox-feed.ts';
import { buildServices } from '../../../infra/local/build-services.ts';
import { cpuProfileEnv } from '../../../test/support/service-process.ts';
import { startSystem, type System } from '../../../test/support/system.ts';
import { cpuMs, peakRssMb } from './proc.ts';
import { benchWebProvider, webBenchOptions } from './web-provider-bench.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const USERS = env('BENCH_USERS', 20_000);
const SECONDS = env('BENCH_SECONDS', 60);
const WARMUP = env('BENCH_WARMUP_SECONDS', 10);
const RATE = process.env['BENCH_RATE'] === undefined ? undefined : env('BENCH_RATE', 2000);
const RUNS = env('BENCH_RUNS', 1);
const CONCURRENCY = env('BENCH_PUBLISH_CONCURRENCY', 64);

interface RunResult {
  offered: string;
  deliveredPerSecond: number;
  p50: number;
  p95: number;
  p99: number;
  peakRssMb: Record<string, number>;
  /** CPU time per delivered device push over the measured window, µs (pushers: per push of their platform). */
  cpuUsPerPush: Record<string, number>;
}

async function seed(sys: System): Promise<void> {
  const now = new Date();
  for (let i = 0; i < USERS; i += 5000) {
    const rows = [];
    for (let u = i; u < Math.min(USERS, i + 5000); u++) {
      for (const platform of ['apns', 'fcm'] as const) {
        const token = platform === 'apns' ? randomBytes(32).toString('hex') : `bench-${randomBytes(24).toString('base64url')}`;
        rows.push({ app: 'demo', platform, token, user_id: `u${u}`, registered_at: now, last_event_at: now });
      }
    }
    await sys.database.db.kysely.insertInto('devices').values(rows).execute();
  }
}

/** Publish jobs until `until`; at `rate` device pushes/s if given, else as fast as confirms allow. */
async function publish(sys: System, until: number, rate: number | undefined, counter: { n: number }): Promise<void> {
  const started = Date.now();
  const worker = async (): Promise<void> => {
    while (Date.now() < until) {
      if (rate !== undefined) {
        const due = started + ((counter.n * 2) / rate) * 1000;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      }
      const n = counter.n++;
      await sys.client.publishPushJob({
        id: `bench-${n}-${started}`,
        app: 'demo',
        userId: `u${n % USERS}`,
        category: 'bench',
        content: { title: 'bench', data: { t: String(Date.now()) } },
      });
    }
  };
  await Promise.all(Array.from({ length: rate === undefined ? CONCURRENCY : Math.min(CONCURRENCY, 16) }, worker));
}

const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

const cpuSnapshot = (sys: System): Map<string, number> => new Map([...sys.services].map(([name, s]) => [name, cpuMs(s.pid)]));

/**
 * CPU µs per delivered push for the services on the push path: the demuxer per device push, each
 * pusher per push of its platform (every bench job is one APNs and one FCM push).
 */
function cpuPerPush(from: Map<string, number>, to: Map<string, number>, delivered: number): Record<string, number> {
  const per = (name: string, pushes: number): number => Math.round((((to.get(name) ?? NaN) - (from.get(name) ?? NaN)) * 1000) / pushes);
  return { demuxer: per('demuxer', delivered), 'apns-pusher': per('apns-pusher', delivered / 2), 'fcm-pusher': per('fcm-pusher', delivered / 2) };
}

function peakRss(sys: System): Record<string, number> {
  return Object.fromEntries([...sys.services].map(([name, s]) => [name, peakRssMb(s.pid)]));
}

async function run(): Promise<RunResult> {
  // BENCH_CPU_PROFILE_DIR: every service writes a V8 CPU profile there when it stops (see
  // tools/bench/src/profile-summary.ts to read them).
  const profiling = cpuProfileEnv(process.env['BENCH_CPU_PROFILE_DIR']);
  await buildServices();
  const sys = await startSystem({ env: { LOG_LEVEL: 'info', APP_CACHE_TTL_MS: '5000', ...profiling } });
  try {
    await seed(sys);
    const counter = { n: 0 };
    const measureFrom = Date.now() + WARMUP * 1000;
    const measureTo = measureFrom + SECONDS * 1000;
    const publishing = publish(sys, measureTo, RATE, counter);
    const latencies: number[] = [];
    let delivered = 0;
    let cursor = 0;
    let cpuFrom: Map<string, number> | undefined;
    let cpuTo: Map<string, number> | undefined;
    while (Date.now() < measureTo + 2000) {
      await new Promise((r) => setTimeout(r, 1000));
      if (cpuFrom === undefined && Date.now() >= measureFrom) cpuFrom = cpuSnapshot(sys);
      if (cpuTo === undefined && Date.now() >= measureTo) cpuTo = cpuSnapshot(sys);
      const batch = await sandboxRecordsAfter(sys.sandbox, cursor);
      for (const r of batch) {
        cursor = Math.max(cursor, r.seq);
        const at = Date.parse(r.receivedAt);
        if (r.status !== 200 || at < measureFrom || at >= measureTo) continue;
        delivered++;
        if (r.t !== undefined) latencies.push(at - r.t);
      }
    }
    await publishing;
    latencies.sort((a, b) => a - b);
    const stats = await sandboxStats(sys.sandbox);
    console.log(`  published ${counter.n} jobs, sandbox answered ${stats.total} requests`);
    return {
      offered: RATE === undefined ? 'max' : `${RATE}/s`,
      deliveredPerSecond: Math.round(delivered / SECONDS),
      p50: pct(latencies, 50),
      p95: pct(latencies, 95),
      p99: pct(latencies, 99),
      peakRssMb: peakRss(sys),
      cpuUsPerPush: cpuFrom !== undefined && cpuTo !== undefined ? cpuPerPush(cpuFrom, cpuTo, delivered) : {},
    };
  } finally {
    await sys.stop();
  }
}

const median = (xs: number[]): number => pct([...xs].sort((a, b) => a - b), 50);
const results: RunResult[] = [];
for (let i = 0; i < RUNS; i++) {
  const r = await run();
  results.push(r);
  console.log(`run ${i + 1} (${r.offered}): ${r.deliveredPerSecond} pushes/s delivered; latency p50 ${r.p50} ms, p95 ${r.p95} ms, p99 ${r.p99} ms; peak RSS MB ${JSON.stringify(r.peakRssMb)}; CPU µs per push ${JSON.stringify(r.cpuUsPerPush)}`);
}
const summary = {
  date: new Date().toISOString(),
  machine: '2 cores, everything local (RabbitMQ, PostgreSQL, sandbox in the load generator process)',
  users: USERS,
  seconds: SECONDS,
  offered: RATE === undefined ? 'max' : RATE,
  runs: results,
  median: {
    deliveredPerSecond: median(results.map((r) => r.deliveredPerSecond)),
    p50: median(results.map((r) => r.p50)),
    p95: median(results.map((r) => r.p95)),
    p99: median(results.map((r) => r.p99)),
    ...Object.fromEntries(['demuxer', 'apns-pusher', 'fcm-pusher'].map((s) => [`cpuUs:${s}`, median(results.map((r) => r.cpuUsPerPush[s] ?? NaN))])),
  },
};
// Web Push (issue 21): the provider's own figure, web pushes/s to the sandbox's push service (decrypting each).
const web = await benchWebProvider(webBenchOptions());
console.log(`web provider → sandbox: ${web.webPushesPerSecond} web pushes/s (${web.sent} delivered, ${web.failed} failed, concurrency ${web.concurrency})`);
Object.assign(summary, { web });
console.table({ median: summary.median });
mkdirSync('test-results', { recursive: true });
writeFileSync(`test-results/bench-${RATE ?? 'max'}.json`, JSON.stringify(summary, null, 2));
