/**
 * `npm run bench:limiter`: what the fleet rate limiter costs when it is not the bottleneck.
 * Runs the real pusher handler (ledger on PostgreSQL, @parse/node-apn against the APNs sandbox)
 * in this process on BENCH_LIMITER_PUSHES pushes (default 5,000), BENCH_LIMITER_CONCURRENCY
 * batches of 100 at once (default 5, like PUSHER_PREFETCH 500), once with no limiter and once
 * with the limiter and an APNs limit far above capacity (1,000,000/s, leased from PostgreSQL).
 * Runs the pair BENCH_RUNS times (default 3), which goes first alternating, and prints both
 * medians and the overhead, in throughput and in this process's CPU a push: the median of the
 * pairs' ratios.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivePushId, type DevicePush } from '@herald/contracts';
import { createAppCache, createDatabase, type Database } from '@herald/db';
import { createPusherHandler, createPusherMetrics, openLimiterDatabase, singleProvider } from '@herald/delivery';
import { createLogger } from '@herald/logging';
import type { InboundMessage, Publisher } from '@herald/messaging';
import { createApnsProvider, loadSandboxSettings, type PushProvider } from '@herald/providers';
import { createRateLimiter, type RateLimiter } from '@herald/rate-limiter';
import { Registry } from '@herald/runtime';
import { startSandbox } from '@herald/sandbox';
import { createTestDatabase } from '@herald/testing';
import { alternating, median } from './stats.ts';

const PUSHES = Number(process.env['BENCH_LIMITER_PUSHES'] ?? 5000);
const CONCURRENCY = Number(process.env['BENCH_LIMITER_CONCURRENCY'] ?? 5);
const RUNS = Number(process.env['BENCH_RUNS'] ?? 3);
const BATCH = 100;
const logger = createLogger({ service: 'limiter-bench', level: 'warn', format: 'json' });
const noPublisher: Publisher = { publish: async () => undefined, publishMany: async () => undefined };

function messages(count: number): InboundMessage[] {
  const jobId = randomUUID();
  const acceptedAt = new Date().toISOString();
  return Array.from({ length: count }, (_, i) => {
    const push: DevicePush = { version: 1, pushId: derivePushId(jobId, String(i)), jobId, deviceId: `bench-${i}`, app: 'demo', platform: 'apns',
      token: randomBytes(32).toString('hex'), userId: `u${i}`, content: { title: 'Bench', body: 'limiter overhead' }, priority: 'high', acceptedAt };
    return { body: Buffer.from(JSON.stringify(push)), headers: {}, routingKey: 'push.apns.send', redelivered: false, attempt: 1, queue: 'push.apns.send' };
  });
}

interface Run {
  perSecond: number;
  /** This process's CPU a push (the handler, and the sandbox it sends to, which does the same work either way). */
  cpuUsPerPush: number;
}

/** Pushes/s through the handler: CONCURRENCY batch workers over one backlog. */
async function run(db: Database, provider: PushProvider, limiter: RateLimiter | undefined): Promise<Run> {
  const handle = createPusherHandler({
    platform: 'apns', providers: singleProvider(provider), ledger: db.ledger, apps: createAppCache(db.apps, 5000), publisher: noPublisher,
    metrics: createPusherMetrics(new Registry()), logger, owner: 'limiter-bench', leaseMs: 30_000, ...(limiter !== undefined && { limiter }),
  });
  const backlog = messages(PUSHES);
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const worker = async (): Promise<void> => {
    for (let batch = backlog.splice(0, BATCH); batch.length > 0; batch = backlog.splice(0, BATCH)) {
      const outcomes = await handle(batch);
      if (outcomes.some((o) => o.kind !== 'ack')) throw new Error(`unexpected outcome ${JSON.stringify(outcomes.find((o) => o.kind !== 'ack'))}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const used = process.cpuUsage(cpu);
  return { perSecond: PUSHES / (Number(process.hrtime.bigint() - started) / 1e9), cpuUsPerPush: (used.user + used.system) / PUSHES };
}

/** Microseconds per acquire(1) on its own, 100 concurrent callers (no sends around it). */
async function acquireCost(limiter: RateLimiter, count = 200_000): Promise<number> {
  const started = process.hrtime.bigint();
  const caller = async (): Promise<void> => {
    for (let i = 0; i < count / 100; i++) if (!(await limiter.acquire(1))) throw new Error('acquire refused');
  };
  await Promise.all(Array.from({ length: 100 }, caller));
  return Number(process.hrtime.bigint() - started) / 1e3 / count;
}

const database = await createTestDatabase('limiter_bench');
const stateDir = await mkdtemp(join(tmpdir(), 'herald-limiter-bench-'));
const sandbox = await startSandbox({ stateDir, logger });
const provider = await createApnsProvider((await loadSandboxSettings(stateDir)).apns, logger);
// A pool like a pusher's (10 connections), not the test helper's small one.
const db = createDatabase({ url: database.url, schema: database.schema, logger });
try {
  await db.apps.upsert({ id: 'demo', apnsTopic: 'com.herald.demo', enabled: true });
  await db.rateLimits.set({ platform: 'apns' }, 1_000_000);
  // Leases through their own pool with asynchronous commits, as the pushers do (openLimiterDatabase);
  // BENCH_LIMITER_SYNC_COMMIT=1 leases through the main pool instead, for comparison.
  const leaseDb = process.env['BENCH_LIMITER_SYNC_COMMIT'] === '1' ? db : openLimiterDatabase({ DATABASE_URL: database.url, DATABASE_SCHEMA: database.schema }, logger);
  const maxSlice = Number(process.env['RATE_LIMIT_MAX_SLICE'] ?? 1000); // the pushers' default
  const limiter = await createRateLimiter({ platform: 'apns', store: leaseDb.rateLimits, logger, registry: new Registry(), maxSlice });
  await run(db, provider, undefined); // warm-up: TLS session, JIT, pools
  const without: Run[] = [];
  const withLimiter: Run[] = [];
  // Each run claims its pushes into the ledger, which grows run by run: the pair's order alternates.
  for (let i = 0; i < RUNS; i++) {
    const order = alternating([false, true], i);
    for (const withIt of order) {
      if (withIt) withLimiter.push(await run(db, provider, limiter));
      else without.push(await run(db, provider, undefined));
    }
    const [w, l] = [without[i], withLimiter[i]];
    console.log(`run ${i + 1}${order[0] === true ? ' (limiter first)' : ''}: no limiter ${w?.perSecond.toFixed(0)} pushes/s at ${w?.cpuUsPerPush.toFixed(0)} µs CPU a push, limiter ${l?.perSecond.toFixed(0)} at ${l?.cpuUsPerPush.toFixed(0)}`);
  }
  const unlimited = await createRateLimiter({ platform: 'fcm', store: db.rateLimits, logger, registry: new Registry() });
  const [limitedCost, unlimitedCost] = [await acquireCost(limiter), await acquireCost(unlimited)];
  console.log(`acquire(1) alone: ${limitedCost.toFixed(2)} µs with a limit (leases from PostgreSQL), ${unlimitedCost.toFixed(2)} µs with no limit configured`);
  limiter.close();
  unlimited.close();
  if (leaseDb !== db) await leaseDb.close();
  const base = median(without.map((r) => r.perSecond));
  const limited = median(withLimiter.map((r) => r.perSecond));
  // Each run against the one beside it: the machine's speed drifts across the runs more than the limiter costs.
  const overhead = 1 - median(withLimiter.map((r, i) => r.perSecond / (without[i]?.perSecond ?? NaN)));
  const cpuOverhead = median(withLimiter.map((r, i) => r.cpuUsPerPush / (without[i]?.cpuUsPerPush ?? NaN))) - 1;
  console.log(`\nmedian of ${RUNS}: no limiter ${base.toFixed(0)} pushes/s, limiter (1,000,000/s limit) ${limited.toFixed(0)} pushes/s`);
  console.log(`overhead (the median of the ${RUNS} pairs' ratios): throughput ${(overhead * 100).toFixed(1)}%, CPU a push ${(cpuOverhead * 100).toFixed(1)}%`);
} finally {
  await provider.close();
  await db.close();
  await sandbox.close();
  await database.drop();
  await rm(stateDir, { recursive: true, force: true });
}
