/**
 * `npm run bench:schedule`: release throughput and lag of the scheduled-push store, in two parts.
 *
 * 1. The morning wave. BENCH_SCHEDULE_ROWS pushes (default 1,000,000) for devices spread over 24
 *    timezones, each asking for the same local wall-clock time with a jitter window, so their due
 *    times fall uniformly into one window of ROWS / BENCH_SCHEDULE_ARRIVAL_PER_S seconds (default
 *    20,000 pushes/s falling due: 50 s), or BENCH_SCHEDULE_WINDOW_S if set. They are stored ahead
 *    of time; the deschedulers release them as they fall due. Prints release throughput (pushes/s
 *    from the first to the last release) and release lag p50/p99/max (commit time − due time).
 * 2. Capacity. BENCH_SCHEDULE_BACKLOG_ROWS pushes (default 200,000) stored already due while no
 *    descheduler runs; then the deschedulers start and drain them as fast as they can.
 *
 * BENCH_DESCHEDULERS deschedulers per platform (default 1, each with its own pool and AMQP
 * connection, all in this process); DESCHEDULER_BATCH_SIZE and DESCHEDULER_CONCURRENCY as for
 * the services. Own vhost and schema, removed afterwards. Nothing consumes the send queues.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { derivePushId, type DevicePush, type Platform } from '@herald/contracts';
import { createDatabase, type Database, type ScheduledPushInput } from '@herald/db';
import { createDeschedulerMetrics, startDescheduler } from '@herald/delivery';
import { createLogger } from '@herald/logging';
import { connectBroker } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { jitterOffsetMs, resolveDeliverAt } from '@herald/scheduling';
import { createTestDatabase, createTestVhost } from '@herald/testing';
import { prepareEnvironment } from '../../../infra/local/prepare.ts';
import { percentile } from './stats.ts';

const ROWS = Number(process.env['BENCH_SCHEDULE_ROWS'] ?? 1_000_000);
const ARRIVAL_PER_S = Number(process.env['BENCH_SCHEDULE_ARRIVAL_PER_S'] ?? 20_000);
const WINDOW_S = Number(process.env['BENCH_SCHEDULE_WINDOW_S'] ?? Math.max(1, Math.round(ROWS / ARRIVAL_PER_S)));
const BACKLOG_ROWS = Number(process.env['BENCH_SCHEDULE_BACKLOG_ROWS'] ?? 200_000);
const DESCHEDULERS = Number(process.env['BENCH_DESCHEDULERS'] ?? 1);
const BATCH = Number(process.env['DESCHEDULER_BATCH_SIZE'] ?? 500);
const CONCURRENCY = Number(process.env['DESCHEDULER_CONCURRENCY'] ?? 2);
/** BENCH_SCHEDULE_BACKLOG_ONLY=1: only part 2 (quick, for trying settings). */
const BACKLOG_ONLY = process.env['BENCH_SCHEDULE_BACKLOG_ONLY'] === '1';
const ZONES = ['UTC', 'Europe/London', 'Europe/Berlin', 'Europe/Athens', 'Europe/Moscow', 'Asia/Dubai', 'Asia/Karachi', 'Asia/Kolkata',
  'Asia/Kathmandu', 'Asia/Dhaka', 'Asia/Bangkok', 'Asia/Shanghai', 'Asia/Tokyo', 'Australia/Adelaide', 'Australia/Sydney',
  'Pacific/Auckland', 'Pacific/Honolulu', 'America/Anchorage', 'America/Los_Angeles', 'America/Denver', 'America/Chicago',
  'America/New_York', 'America/Sao_Paulo', 'Atlantic/Azores'];
const logger = createLogger({ service: 'schedule-bench', level: 'warn', format: 'json' });

/**
 * One job of `rows` pushes, built and stored 20,000 at a time (so the bench does not hold a
 * million objects while the deschedulers run beside it, in this process). Device i in zone i % 24
 * asks for the wall-clock time that `dueAt` (a minute boundary) is in its zone, with a `windowS`
 * jitter: every zone resolves to the same window. Returns the seconds spent storing.
 */
async function buildAndStore(db: Database, rows: number, dueAt: Date, windowS: number): Promise<number> {
  const jobId = randomUUID();
  const now = new Date();
  // Each zone's local time resolves (luxon, as the demuxer does) to the same instant; the
  // per-device jitter is resolveDeliverAt's own. Resolving the zone once instead of per row keeps
  // the bench's row building (tens of µs per row) from overlapping the release it measures.
  const bases = ZONES.map((zone) => {
    const localTime = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(dueAt);
    return resolveDeliverAt({ localTime }, zone, jobId, '', now).dueAt.getTime();
  });
  const row = (i: number): ScheduledPushInput => {
    const deviceId = String(i);
    const at = windowS === 0 ? dueAt : new Date((bases[i % ZONES.length] ?? NaN) + jitterOffsetMs(jobId, deviceId, windowS * 1000));
    const platform: Platform = i % 2 === 0 ? 'apns' : 'fcm';
    const push: DevicePush = { version: 1, pushId: derivePushId(jobId, deviceId), jobId, deviceId, app: 'demo', platform,
      token: i.toString(16).padStart(64, '0'), userId: `u${i}`, content: { title: 'Good morning', body: 'Your digest' }, priority: 'high',
      acceptedAt: now.toISOString() };
    return { dueAt: at, push };
  };
  let storing = 0;
  for (let i = 0; i < rows; i += 20_000) {
    const chunk = Array.from({ length: Math.min(20_000, rows - i) }, (_, k) => row(i + k));
    const t0 = Date.now();
    await db.scheduled.schedule(chunk);
    storing += Date.now() - t0;
  }
  return storing / 1000;
}

/** BENCH_SCHEDULE_TIMELINE=1: [commit time, rows, worst lag in the batch] per batch, printed per 5 s. */
const timeline: Array<[number, number, number]> = [];

interface Run {
  stop(): Promise<void>;
  lags: number[];
  releasedAt: number[];
}

/** DESCHEDULERS per platform, each recording commit time − due time per released push. */
async function startDeschedulers(amqpUrl: string, dbUrl: string, schema: string): Promise<Run> {
  const lags: number[] = [];
  const releasedAt: number[] = [];
  const stops: Array<() => Promise<void>> = [];
  for (const platform of ['apns', 'fcm'] as const) {
    for (let k = 0; k < DESCHEDULERS; k++) {
      const db: Database = createDatabase({ url: dbUrl, schema, poolSize: CONCURRENCY + 2 });
      const broker = await connectBroker({ url: amqpUrl, logger, connectionName: `bench-${platform}-${k}` });
      const store = {
        nextDueAt: db.scheduled.nextDueAt,
        withDueBatch: (async (p, now, limit, release) => {
          let dues: number[] = [];
          const n = await db.scheduled.withDueBatch(p, now, limit, async (rows) => {
            dues = rows.map((r) => r.dueAt.getTime());
            await release(rows);
          });
          const at = Date.now();
          for (const d of dues) lags.push(at - d);
          if (n > 0) {
            releasedAt.push(at);
            if (process.env['BENCH_SCHEDULE_TIMELINE'] === '1') timeline.push([at, n, Math.max(...dues.map((d) => at - d))]);
          }
          return n;
        }) as Database['scheduled']['withDueBatch'],
      };
      const listener = await db.scheduled.listen(platform, (d) => descheduler.notify(d));
      const descheduler = startDescheduler({ platform, store, publisher: broker.publisher, metrics: createDeschedulerMetrics(new Registry()), logger,
        batchSize: BATCH, concurrency: CONCURRENCY, recheckMs: 30_000, errorBackoffMs: 1_000 });
      stops.push(async () => { await descheduler.stop(); await listener.close(); await broker.close(); await db.close(); });
    }
  }
  return { lags, releasedAt, stop: async () => void (await Promise.all(stops.map((s) => s()))) };
}

interface Figures {
  rows: number;
  releasedPerS: number;
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
}

function figures(n: number, run: Run): Figures {
  const lags = [...run.lags].sort((a, b) => a - b);
  const first = Math.min(...run.releasedAt);
  const last = Math.max(...run.releasedAt);
  return {
    rows: n,
    releasedPerS: Math.round(n / Math.max(0.001, (last - first) / 1000)),
    lagP50Ms: percentile(lags, 50),
    lagP99Ms: percentile(lags, 99),
    lagMaxMs: lags[lags.length - 1] ?? NaN,
  };
}

async function drained(run: Run, n: number): Promise<void> {
  while (run.lags.length < n) await new Promise((r) => setTimeout(r, 100));
  await run.stop();
}

/** Part 1: the wave, stored ahead of time, released as it falls due. */
async function wave(env: { amqpUrl: string; dbUrl: string; schema: string; db: Database }): Promise<Figures & { storedPerS: number }> {
  // Building and storing run at about 15k rows/s together here: leave a lead for both.
  const leadMs = 15_000 + (ROWS / 10_000) * 1000;
  const dueAt = new Date(Math.ceil((Date.now() + leadMs) / 60_000) * 60_000); // local times have minute precision
  const run = await startDeschedulers(env.amqpUrl, env.dbUrl, env.schema);
  const storeS = await buildAndStore(env.db, ROWS, dueAt, WINDOW_S);
  // The earliest due time is dueAt itself (the jitter only adds).
  if (Date.now() > dueAt.getTime()) console.warn('warning: storing overran the lead time; lags include that');
  await drained(run, ROWS);
  return { ...figures(ROWS, run), storedPerS: Math.round(ROWS / storeS) };
}

/** Part 2: a backlog already due when the deschedulers start, drained as fast as they can. */
async function backlog(env: { amqpUrl: string; dbUrl: string; schema: string; db: Database }): Promise<Figures & { cpuUsPerPush: number }> {
  await buildAndStore(env.db, BACKLOG_ROWS, new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000), 0);
  const profile = await startProfile();
  const cpu = process.cpuUsage();
  const run = await startDeschedulers(env.amqpUrl, env.dbUrl, env.schema);
  await drained(run, BACKLOG_ROWS);
  const used = process.cpuUsage(cpu);
  await profile?.stop();
  return { ...figures(BACKLOG_ROWS, run), cpuUsPerPush: (used.user + used.system) / BACKLOG_ROWS };
}

/**
 * BENCH_CPU_PROFILE_DIR: a V8 CPU profile of this process (the deschedulers) while it drains the
 * backlog, without the row building before it; read it with tools/bench/src/profile-summary.ts.
 */
async function startProfile(): Promise<{ stop(): Promise<void> } | undefined> {
  const dir = process.env['BENCH_CPU_PROFILE_DIR'];
  if (dir === undefined) return undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    stop: async () => {
      const { profile } = await session.post('Profiler.stop');
      await mkdir(dir, { recursive: true });
      const file = join(dir, `schedule-drain-${Date.now()}.cpuprofile`);
      await writeFile(file, JSON.stringify(profile));
      session.disconnect();
      console.log(`cpu profile of the drain: ${file}`);
    },
  };
}

async function main(): Promise<void> {
  const vhost = await createTestVhost('bench');
  const database = await createTestDatabase('bench');
  try {
    await prepareEnvironment({ amqpUrl: vhost.amqpUrl, databaseUrl: database.url, schema: database.schema, retryDelaysMs: [1000], logger });
    const env = { amqpUrl: vhost.amqpUrl, dbUrl: database.url, schema: database.schema, db: database.db };
    const setup = { timezones: ZONES.length, deschedulersPerPlatform: DESCHEDULERS, batchSize: BATCH, concurrency: CONCURRENCY };
    console.log(`setup: ${JSON.stringify(setup)}`);
    const w = BACKLOG_ONLY ? undefined : await wave(env);
    if (w !== undefined) {
      console.log(`wave: ${w.rows} pushes due within ${WINDOW_S} s (${Math.round(w.rows / WINDOW_S)}/s falling due), stored at ${w.storedPerS}/s`);
      console.log(`  released ${w.releasedPerS} pushes/s; lag p50 ${w.lagP50Ms} ms, p99 ${w.lagP99Ms} ms, max ${w.lagMaxMs} ms`);
    }
    if (timeline.length > 0) {
      const t0 = timeline[0]?.[0] ?? 0;
      const buckets = new Map<number, { n: number; worst: number }>();
      for (const [at, n, worst] of timeline) {
        const k = Math.floor((at - t0) / 5000) * 5;
        const b = buckets.get(k) ?? { n: 0, worst: 0 };
        buckets.set(k, { n: b.n + n, worst: Math.max(b.worst, worst) });
      }
      for (const [k, b] of buckets) console.log(`  t+${k}s (${new Date(t0 + k * 1000).toISOString().slice(11, 19)}): ${Math.round(b.n / 5)}/s, worst lag ${b.worst} ms`);
      timeline.length = 0;
    }
    const b = await backlog(env);
    console.log(`capacity: ${b.rows} pushes already due when the deschedulers start, drained at ${b.releasedPerS} pushes/s` +
      ` (the deschedulers' process: ${b.cpuUsPerPush.toFixed(1)} µs CPU per push)`);
    if (w !== undefined) {
      // Released first → last can only approach the rate at which pushes fall due (the window's
      // edges): keeping pace means within 1% of it. The capacity part shows the headroom.
      const due = w.rows / WINDOW_S;
      const keptPace = w.releasedPerS >= 0.99 * due;
      const met = due >= 20_000 && keptPace && w.lagP99Ms < 1_000 && b.releasedPerS >= 20_000;
      console.log(`\ntarget (a wave falling due at >= 20,000 pushes/s released at its pace with p99 lag < 1 s; >= 20,000 pushes/s capacity): ${met ? 'met' : 'NOT met'}` +
        ` (kept pace: ${keptPace ? 'yes' : 'no'}, p99 ${w.lagP99Ms} ms, capacity ${b.releasedPerS}/s)`);
    }
  } finally {
    await database.drop();
    await vhost.delete();
  }
}

await main();
process.exit(0);
