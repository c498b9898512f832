/**
 * `npm run bench:api`: what publishing costs a caller. Starts the API and the demuxer (own vhost,
 * schema, sandbox), then measures, each on this machine:
 *  1. HTTP POST /v1/jobs at a fixed open-loop rate (API_BENCH_RATE, default 1,000 jobs/s) for
 *     API_BENCH_SECONDS: latency percentiles from each request's scheduled start to its answer
 *     (the answer comes after RabbitMQ's publisher confirm), and the API's own account of each
 *     (Server-Timing: recording the id in PostgreSQL, the confirm, arrival to answer);
 *  2. the most single-job requests/s the API accepts with API_BENCH_CONCURRENCY requests in flight;
 *  3. POST /v1/jobs:batch throughput (100 jobs a request);
 *  4. the client library's publishPushJob latency at the same fixed rate.
 * Prints a table and writes test-results/api-bench.json. Target: single-job p99 < 5 ms at 1,000 jobs/s.
 * Also printed, to read the figures by: how often this machine's CPUs went missing for over 1 ms
 * just before the run (other processes or the hypervisor; see cpuStalls), and for the fixed-rate
 * run the API's GC pauses and PostgreSQL's and RabbitMQ's CPU per job; the API's peak RSS (VmHWM)
 * over the whole run and during each scenario it is measured in (apiPeaks).
 * Secondary: the fixed-rate run again with the API and the load generator (this process) each
 * pinned to a CPU of its own with `taskset` (RabbitMQ, PostgreSQL and everything else keep both).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { API_TEST_ENV, apiUrl, teamKey } from '../../../test/support/http-api.ts';
import { buildServices } from '../../../infra/local/build-services.ts';
import { metric } from '../../../test/support/metrics.ts';
import { cpuProfileEnv } from '../../../test/support/service-process.ts';
import { startSystem, type System } from '../../../test/support/system.ts';
import { cpuMs, cpuSpentMs, listenerOf, localPortsOf, peakRssMb, postgresProcesses, processTree, sampleCpu, type CpuRow } from './proc.ts';
import { percentile } from './stats.ts';

const RATE = Number(process.env['API_BENCH_RATE'] ?? 1000);
const SECONDS = Number(process.env['API_BENCH_SECONDS'] ?? 10);
const CONCURRENCY = Number(process.env['API_BENCH_CONCURRENCY'] ?? 64);
const WARMUP_SECONDS = 2;

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const job = (i: number) => ({ id: randomUUID(), app: 'demo', userId: `bench-${i % 1000}`, category: 'bench', content: { title: `bench ${i}` } });

/** The API's Server-Timing stages (ms) of each answer, by stage name. */
type TimingSink = Map<string, number[]>;

function request(base: URL, method: string, path: string, headers: http.OutgoingHttpHeaders, payload?: string, sink?: TimingSink): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: base.hostname, port: base.port, path, method, agent, headers }, (res) => {
      const timing = res.headers['server-timing'];
      if (sink !== undefined && typeof timing === 'string') {
        for (const [, name = '', dur] of timing.matchAll(/(\w+);dur=([\d.]+)/g)) {
          const durations = sink.get(name) ?? [];
          if (durations.length === 0) sink.set(name, durations);
          durations.push(Number(dur));
        }
      }
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

function post(base: URL, path: string, key: string, body: unknown, sink?: TimingSink): Promise<number> {
  const payload = JSON.stringify(body);
  return request(base, 'POST', path, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), authorization: `Bearer ${key}` }, payload, sink);
}

interface Summary {
  /** CPU the API process spent per job in this scenario (user + system), ms: load-independent. */
  apiCpuMsPerJob?: number;
  /** The API's peak RSS (VmHWM) during this scenario, MB (apiPeaks). */
  apiPeakRssMb?: number;
  /** Requests answered 202. */
  count: number;
  /** Jobs those requests carried. */
  jobs: number;
  errors: number;
  perSecond: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

function summarise(latencies: number[], errors: number, seconds: number): Summary {
  const sorted = [...latencies].sort((a, b) => a - b);
  const r = (v: number) => Math.round(v * 100) / 100;
  return { count: sorted.length, jobs: sorted.length, errors, perSecond: Math.round(sorted.length / seconds), p50: r(percentile(sorted, 50)), p90: r(percentile(sorted, 90)), p99: r(percentile(sorted, 99)), max: r(sorted.at(-1) ?? NaN) };
}

/** What went wrong, by status or error message, printed after the table. */
const failures = new Map<string, number>();
function noteError(what: unknown): void {
  failures.set(String(what), (failures.get(String(what)) ?? 0) + 1);
}

/** Open loop: one call every 1/rate s, scheduled ahead of time (a slow answer does not delay the next call). */
async function fixedRate(rate: number, seconds: number, call: (i: number) => Promise<unknown>): Promise<Summary> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const total = rate * seconds;
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    // From the scheduled start (so a late generator does not hide queueing), or from the actual
    // start when the call went out up to 1 ms early.
    const from = Math.min(due, performance.now());
    inFlight.push(
      call(i).then(
        (status) => {
          if (status === 202 || status === undefined || typeof status === 'object') latencies.push(performance.now() - from);
          else {
            errors++;
            noteError(status);
          }
        },
        (err: Error) => {
          errors++;
          noteError(err.message);
        },
      ),
    );
  }
  await Promise.all(inFlight);
  return summarise(latencies, errors, seconds);
}

/** Closed loop: `concurrency` callers, each sending its next request when the last was answered. */
async function saturate(concurrency: number, seconds: number, call: (i: number) => Promise<number>, perCall = 1): Promise<Summary> {
  const latencies: number[] = [];
  let errors = 0;
  let i = 0;
  const until = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < until) {
      const t = performance.now();
      const status = await call(i++).catch((err: Error) => err.message);
      if (status === 202) {
        latencies.push(performance.now() - t);
      } else {
        errors++;
        noteError(status);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const s = summarise(latencies, errors, seconds);
  return { ...s, jobs: s.count * perCall, perSecond: s.perSecond * perCall };
}

/**
 * The API's peak RSS per scenario, and over the whole run. Linux sets a process's VmHWM back to its
 * RSS now on a write of "5" to /proc/<pid>/clear_refs, so each scenario's peak is read on its own;
 * the peak so far is kept before each reset, so the whole run's is still the highest of all.
 * Without that file (not Linux, not permitted) the scenarios have no peak of their own.
 */
const apiPeaks = {
  run: 0,
  /** Fold the peak since the last reset into the run's and start a new one; whether it could. */
  restart(pid: number | undefined): boolean {
    this.run = Math.max(this.run, peakRssMb(pid) || 0);
    if (pid === undefined) return false;
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
      return true;
    } catch {
      return false;
    }
  },
  /** The whole run's peak so far. */
  total(pid: number | undefined): number {
    return Math.max(this.run, peakRssMb(pid) || 0);
  },
};

/** Run a scenario and add the API's CPU per job and its peak RSS meanwhile. */
async function withCpu(sys: System, scenario: () => Promise<Summary>): Promise<Summary> {
  const pid = sys.service('api').pid;
  const own = apiPeaks.restart(pid);
  const before = cpuMs(pid);
  const s = await scenario();
  const cpu = Math.round(((cpuMs(pid) - before) / Math.max(1, s.jobs)) * 1000) / 1000;
  return { ...s, apiCpuMsPerJob: cpu, ...(own && { apiPeakRssMb: peakRssMb(pid) }) };
}

/** The API's garbage-collection pauses so far (prom-client's nodejs_gc_duration_seconds, all kinds). */
async function gcSoFar(sys: System): Promise<GcPauses> {
  const api = sys.service('api');
  const [count, seconds] = await Promise.all([metric(api, 'nodejs_gc_duration_seconds_count'), metric(api, 'nodejs_gc_duration_seconds_sum')]);
  return { pauses: count, ms: seconds * 1000 };
}

/**
 * How often this machine's CPUs vanish: one busy thread per CPU reads the clock in a loop for
 * `ms`; a gap of over 1 ms between two readings is time the thread was not running (another
 * process, or the hypervisor running something else). Run before the scenarios, on an idle system.
 */
async function cpuStalls(ms: number): Promise<{ perCpuPerSecond: number; maxMs: number }> {
  const code = `const { parentPort, workerData } = require('node:worker_threads');
    const end = performance.now() + workerData; let last = performance.now(), gaps = 0, max = 0;
    while (last < end) { const t = performance.now(); if (t - last > 1) { gaps++; max = Math.max(max, t - last); } last = t; }
    parentPort.postMessage({ gaps, max });`;
  const results = await Promise.all(
    os.cpus().map(() => new Promise<{ gaps: number; max: number }>((resolve, reject) => new Worker(code, { eval: true, workerData: ms }).once('message', resolve).once('error', reject))),
  );
  const gaps = results.reduce((n, r) => n + r.gaps, 0);
  return { perCpuPerSecond: Math.round((gaps / results.length / (ms / 1000)) * 10) / 10, maxMs: Math.round(Math.max(...results.map((r) => r.max)) * 10) / 10 };
}

/**
 * RabbitMQ (the node this system uses, with its child processes) and PostgreSQL (the backends of
 * this system's processes and the server's own processes), not other work on this machine.
 */
function serverRows(sys: System): CpuRow[] {
  const port = (url: string | undefined, fallback: number): number => Number(new URL(url ?? '').port || fallback);
  const beam = listenerOf(port(sys.env['AMQP_URL'], 5672));
  const clients = (): number[] => [process.pid, ...[...sys.services.values()].flatMap((s) => (s.pid === undefined ? [] : [s.pid]))];
  return [
    { name: 'rabbitmq', pids: () => (beam === undefined ? [] : processTree(beam)) },
    {
      name: 'postgres',
      pids: () => {
        const pg = postgresProcesses(port(sys.env['DATABASE_URL'], 5432), localPortsOf(clients()));
        return [...pg.ours, ...pg.server];
      },
    },
  ];
}

/** Every thread of `pid` onto `cpus` (a taskset list such as "0" or "0-1"). */
const pin = (pid: number, cpus: string): void => void execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });

/**
 * `scenario` with the API on the first CPU and the load generator on the last, then both back on
 * every CPU. Undefined where that cannot be done (one CPU, no taskset).
 */
async function pinnedRun(sys: System, scenario: () => Promise<Summary>): Promise<Summary | undefined> {
  const api = sys.service('api').pid;
  const last = os.cpus().length - 1;
  if (api === undefined || last < 1) return undefined;
  try {
    pin(api, '0');
    pin(process.pid, String(last));
  } catch {
    return undefined;
  }
  try {
    return await scenario();
  } finally {
    pin(api, `0-${last}`);
    pin(process.pid, `0-${last}`);
  }
}

const STAGE_NAMES: Record<string, string> = {
  record: 'id recorded (PostgreSQL)',
  confirm: 'publish confirmed (RabbitMQ)',
  total: 'arrival to answer',
};

interface GcPauses {
  pauses: number;
  ms: number;
}

async function bench(sys: System): Promise<{ results: Record<string, Summary>; gc: GcPauses; cpu: { postgres: number; rabbitmq: number } }> {
  const key = await teamKey(sys, 'bench', ['demo']);
  const base = new URL(apiUrl(sys));
  const single = (i: number) => post(base, '/v1/jobs', key, job(i));
  await fixedRate(RATE, WARMUP_SECONDS, single);
  // The floor: the same load generator and HTTP stack, an answer that touches neither database nor
  // broker; its API CPU a request is what any request costs the API at this rate.
  const healthz = await withCpu(sys, () => fixedRate(RATE, SECONDS / 2, async () => ((await request(base, 'GET', '/healthz', {})) === 200 ? 202 : 500)));
  // The fixed-rate run also collects the API's own account (Server-Timing): PostgreSQL, the
  // confirm, and arrival to answer, so the caller's latency can be split into the API's part
  // and the rest (generator, loopback, the wait for a CPU before the API sees the request).
  const stages: TimingSink = new Map();
  const gcBefore = await gcSoFar(sys);
  const rows = serverRows(sys);
  const serversBefore = sampleCpu(rows);
  const httpFixed = await withCpu(sys, () => fixedRate(RATE, SECONDS, (i) => post(base, '/v1/jobs', key, job(i), stages)));
  const servers = cpuSpentMs(serversBefore, sampleCpu(rows));
  const perJob = (ms: number) => Math.round((ms / Math.max(1, httpFixed.jobs)) * 1000) / 1000;
  const cpu = { postgres: perJob(servers.get('postgres') ?? NaN), rabbitmq: perJob(servers.get('rabbitmq') ?? NaN) };
  const gcAfter = await gcSoFar(sys);
  const gc = { pauses: gcAfter.pauses - gcBefore.pauses, ms: Math.round((gcAfter.ms - gcBefore.ms) * 10) / 10 };
  const pinned = await pinnedRun(sys, () => withCpu(sys, () => fixedRate(RATE, SECONDS, (i) => post(base, '/v1/jobs', key, job(i)))));
  const httpMax = await withCpu(sys, () => saturate(CONCURRENCY, SECONDS / 2, single));
  const batchOf100 = (i: number) => post(base, '/v1/jobs:batch', key, { jobs: Array.from({ length: 100 }, (_, j) => job(i * 100 + j)) });
  const batch = await withCpu(sys, () => saturate(8, SECONDS / 2, batchOf100, 100));
  await fixedRate(RATE, WARMUP_SECONDS, (i) => sys.client.publishPushJob(job(i)));
  const clientFixed = await fixedRate(RATE, SECONDS, (i) => sys.client.publishPushJob(job(i)));
  const results = {
    [`HTTP POST /v1/jobs at ${RATE}/s`]: httpFixed,
    ...(pinned !== undefined && { [`HTTP POST /v1/jobs at ${RATE}/s, API and generator pinned`]: pinned }),
    [`HTTP POST /v1/jobs, ${CONCURRENCY} in flight`]: httpMax,
    'HTTP POST /v1/jobs:batch (100 jobs), 8 in flight': batch,
    [`client publishPushJob at ${RATE}/s`]: clientFixed,
    [`HTTP GET /healthz at ${RATE}/s (the HTTP floor)`]: healthz,
    ...Object.fromEntries([...stages].map(([name, ms]) => [`  of which in the API: ${STAGE_NAMES[name] ?? name}`, summarise(ms, 0, SECONDS)])),
  };
  return { results, gc, cpu };
}

await buildServices();
// BENCH_CPU_PROFILE_DIR: the API and demuxer write V8 CPU profiles there when they stop.
const profiling = cpuProfileEnv(process.env['BENCH_CPU_PROFILE_DIR']);
const sys = await startSystem({ only: (process.env['API_BENCH_ONLY_API'] ? ['api'] : ['api', 'demuxer']), env: { ...API_TEST_ENV, API_KEY_CACHE_TTL_MS: '5000', APP_CACHE_TTL_MS: '5000', ...profiling } });
try {
  const stalls = await cpuStalls(3000);
  const { results, gc, cpu } = await bench(sys);
  console.log('\nscenario                                            jobs/s   p50 ms   p90 ms   p99 ms   max ms  errors  API CPU ms/job  API peak RSS MB');
  for (const [name, s] of Object.entries(results)) {
    const cells = [s.perSecond, s.p50, s.p90, s.p99, s.max].map((v) => String(v).padStart(8)).join(' ');
    console.log(`${name.padEnd(50)}${cells} ${String(s.errors).padStart(7)} ${String(s.apiCpuMsPerJob ?? '').padStart(15)} ${String(s.apiPeakRssMb ?? '').padStart(16)}`);
  }
  if (failures.size > 0) {
    console.log(`failures: ${JSON.stringify(Object.fromEntries(failures))}`);
    const firstError = sys.service('api').logs.find((l) => (l.level ?? 0) >= 50);
    if (firstError !== undefined) console.log(`first API error: ${JSON.stringify(firstError).slice(0, 600)}`);
  }
  console.log(`(machine: ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; before the run, each CPU went missing for over 1 ms ${stalls.perCpuPerSecond} times a second, longest ${stalls.maxMs} ms)`);
  console.log(`(API garbage collection during the ${RATE}/s run: ${gc.pauses} pauses, ${gc.ms} ms in all; API peak RSS ${apiPeaks.total(sys.service('api').pid)} MB over the whole run)`);
  console.log(`(CPU ms per job during the ${RATE}/s run, the demuxer's share included; this system's backends and the servers' own processes: PostgreSQL ${cpu.postgres}, RabbitMQ ${cpu.rabbitmq})`);
  const target = Object.values(results)[0] as Summary;
  console.log(`\nsingle-job HTTP publish p99 at ${RATE} jobs/s: ${target.p99} ms (target < 5 ms: ${target.p99 < 5 ? 'met' : 'NOT met'})`);
  mkdirSync('test-results', { recursive: true });
  writeFileSync('test-results/api-bench.json', `${JSON.stringify({ at: new Date().toISOString(), rate: RATE, seconds: SECONDS, cpuStalls: stalls, apiGc: gc, apiPeakRssMb: apiPeaks.total(sys.service('api').pid), cpuMsPerJob: cpu, results }, null, 2)}\n`);
} finally {
  agent.destroy();
  await sys.stop();
}
