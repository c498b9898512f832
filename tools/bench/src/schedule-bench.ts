/**
 * `npm run bench:schedule`: release throughput and lag of the scheduled-push store.
 * Stores BENCH_SCHEDULE_ROWS pushes (default 200,000) for devices spread over 24 timezones,
 * each asking for the same local wall-clock time with a jitter window, so their due times fall
 * into a BENCH_SCHEDULE_WINDOW_S-second window (default 5). Then BENCH_DESCHEDULERS
 * deschedulers per platform (default 1, each with its own pool and AMQP connection, in this
 * process) release them to the send queues. Prints scheduling rate, release throughput
 * (pushes/s from the first to the last release) and release lag p50/p99/max (commit time −
 * due time). Own vhost and schema, removed afterwards. Nothing consumes the send queues.
 */
import { randomUUID } from 'node:crypto';
import { derivePushId, type DevicePush, type Platform } from '@herald/contracts';
import { createDatabase, type Database, type ScheduledPushInput } from '@herald/db';
import { createDeschedulerMetrics, startDescheduler } from '@herald/delivery';
import { createLogger } from '@herald/logging';
import { connectBroker } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { resolveDeliverAt } from '@herald/scheduling';
import { createTestDatabase, createTestVhost } from '@herald/testing';
import { prepareEnvironment } from '../../../infra/local/prepare.ts';

const ROWS = Number(process.env['BENCH_SCHEDULE_ROWS'] ?? 200_000);
const WINDOW_S = Number(process.env['BENCH_SCHEDULE_WINDOW_S'] ?? 5);
const DESCHEDULERS = Number(process.env['BENCH_DESCHEDULERS'] ?? 1);
const BATCH = Number(process.env['DESCHEDULER_BATCH_SIZE'] ?? 500);
const ZONES = ['UTC', 'Europe/London', 'Europe/Berlin', 'Europe/Athens', 'Europe/Moscow', 'Asia/Dubai', 'Asia/Karachi', 'Asia/Kolkata',
  'Asia/Kathmandu', 'Asia/Dhaka', 'Asia/Bangkok', 'Asia/Shanghai', 'Asia/Tokyo', 'Australia/Adelaide', 'Australia/Sydney',
  'Pacific/Auckland', 'Pacific/Honolulu', 'America/Anchorage', 'America/Los_Angeles', 'America/Denver', 'America/Chicago',
  'America/New_York', 'America/Sao_Paulo', 'Atlantic/Azores'];
const logger = createLogger({ service: 'schedule-bench', level: 'warn', format: 'json' });
const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/**
 * One job; device i in zone i % 24 asks for the wall-clock time that `dueAt` (a minute
 * boundary) is in its zone, with a WINDOW_S jitter: every zone resolves to the same window.
 */
function buildRows(dueAt: Date): ScheduledPushInput[] {
  const jobId = randomUUID();
  const now = new Date();
  return Array.from({ length: ROWS }, (_, i) => {
    const zone = ZONES[i % ZONES.length] ?? 'UTC';
    const localTime = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(dueAt);
    const deviceId = String(i);
    const at = resolveDeliverAt({ localTime, jitter: `PT${WINDOW_S}S` }, zone, jobId, deviceId, now).dueAt;
    const platform: Platform = i % 2 === 0 ? 'apns' : 'fcm';
    const push: DevicePush = { version: 1, pushId: derivePushId(jobId, deviceId), jobId, deviceId, app: 'demo', platform,
      token: `t${i}`.padEnd(64, '0'), userId: `u${i}`, content: { title: 'Good morning', body: 'Your digest' }, priority: 'high',
      acceptedAt: now.toISOString() };
    return { dueAt: at, push };
  });
}

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
      const db: Database = createDatabase({ url: dbUrl, schema, poolSize: 2 });
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
          if (n > 0) releasedAt.push(at);
          return n;
        }) as Database['scheduled']['withDueBatch'],
      };
      const listener = await db.scheduled.listen(platform, (d) => descheduler.notify(d));
      const descheduler = startDescheduler({ platform, store, publisher: broker.publisher, metrics: createDeschedulerMetrics(new Registry()), logger,
        batchSize: BATCH, recheckMs: 30_000, errorBackoffMs: 1_000 });
      stops.push(async () => { await descheduler.stop(); await listener.close(); await broker.close(); await db.close(); });
    }
  }
  return { lags, releasedAt, stop: async () => void (await Promise.all(stops.map((s) => s()))) };
}

async function main(): Promise<void> {
  const vhost = await createTestVhost('bench');
  const database = await createTestDatabase('bench');
  try {
    await prepareEnvironment({ amqpUrl: vhost.amqpUrl, databaseUrl: database.url, schema: database.schema, retryDelaysMs: [1000], logger });
    // Storing runs at 8-9k rows/s here: leave enough lead that every row is stored before it is due.
    const leadMs = Math.max(10_000, (ROWS / 6_000) * 1000);
    const dueAt = new Date(Math.ceil((Date.now() + leadMs) / 60_000) * 60_000); // local times have minute precision
    const rows = buildRows(dueAt);
    const run = await startDeschedulers(vhost.amqpUrl, database.url, database.schema);
    const t0 = Date.now();
    for (let i = 0; i < rows.length; i += 20_000) await database.db.scheduled.schedule(rows.slice(i, i + 20_000));
    const scheduleS = (Date.now() - t0) / 1000;
    if (Date.now() > dueAt.getTime()) console.warn('warning: scheduling overran the lead time; lags include that');
    while (run.lags.length < ROWS) await new Promise((r) => setTimeout(r, 100));
    await run.stop();
    report(rows.length, scheduleS, run);
  } finally {
    await database.drop();
    await vhost.delete();
  }
}

function report(n: number, scheduleS: number, run: Run): void {
  const lags = [...run.lags].sort((a, b) => a - b);
  const first = Math.min(...run.releasedAt);
  const last = Math.max(...run.releasedAt);
  const figures = {
    rows: n, timezones: ZONES.length, dueWindowS: WINDOW_S, deschedulersPerPlatform: DESCHEDULERS, batchSize: BATCH,
    scheduledPerS: Math.round(n / scheduleS),
    releasedPerS: Math.round(n / Math.max(0.001, (last - first) / 1000)),
    lagP50Ms: percentile(lags, 50), lagP99Ms: percentile(lags, 99), lagMaxMs: lags[lags.length - 1],
  };
  console.table(figures);
}

await main();
process.exit(0);
