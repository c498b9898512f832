/**
 * `npm run bench:fanout`: one job to a topic of BENCH_FANOUT_DEVICES devices (default 1,000,000),
 * expanded in chunks by two demuxers (ADR 0013). Starts the whole system (own vhost, schema and
 * sandbox), seeds the topic with seedAudience (generate_series inside PostgreSQL), then:
 * 1. limiter off: the expansion rate (devices read per second until every chunk is done) and
 *    delivered pushes/s at the sandbox;
 * 2. at a set limit (BENCH_FANOUT_RATE pushes/s, split evenly between APNs and FCM; a topic of a tenth of the devices): delivered/s;
 * 3. cancel mid fan-out: the time from DELETE to the last push the sandbox receives;
 * 4. SIGKILL of a demuxer mid-way (a topic of BENCH_FANOUT_KILL_DEVICES): lost and duplicates
 *    counted per token at the sandbox;
 * and the peak RSS of every service. Prints a table, writes test-results/fanout-bench.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cancelJob, createAudienceStore, createFanoutRepository, seedAudience } from '@herald/db';
import { buildServices } from '../../../infra/local/build-services.ts';
import { startExtraService, startSystem, type System } from '../../../test/support/system.ts';
import { recordsAfter } from '../../../test/support/sandbox-client.ts';
import { sandboxStats } from './sandbox-feed.ts';
import { peakRssMb } from './proc.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const DEVICES = env('BENCH_FANOUT_DEVICES', 1_000_000);
const LIMIT = env('BENCH_FANOUT_RATE', 2000);
const KILL_DEVICES = env('BENCH_FANOUT_KILL_DEVICES', Math.min(DEVICES, 100_000));
const CHUNK = env('BENCH_FANOUT_CHUNK', 1000);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A topic whose members are the seeded users user-1 … user-<n> (seedAudience's names), through the audience store. */
async function topicOfFirst(sys: System, topic: string, n: number): Promise<void> {
  const store = createAudienceStore(sys.database.db.kysely);
  await store.createTopic('demo', topic);
  const eventAt = new Date().toISOString();
  for (let i = 1; i <= n; i += 5000) {
    const batch = Array.from({ length: Math.min(5000, n - i + 1) }, (_, k) => ({ app: 'demo', topic, member: { userId: `user-${i + k}` }, subscribed: true, eventAt }));
    await store.applyTopicMemberships(batch);
  }
}

async function post(sys: System, id: string, topic: string): Promise<void> {
  await sys.client.publishPushJob({ id, app: 'demo', audience: { topic }, category: 'bench', content: { title: 'fan-out bench' } });
}

async function fanoutState(sys: System, id: string): Promise<string | undefined> {
  return createFanoutRepository(sys.database.db.kysely).state(id);
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 3_600_000, pollMs = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(pollMs);
  }
}

/** Publish a job to `topic`; measure expansion (until every chunk is done) and delivery (until `expected` more sandbox records). */
async function sendAll(sys: System, id: string, topic: string, expected: number): Promise<{ expansionPerS: number; deliveredPerS: number }> {
  const before = (await sandboxStats(sys.sandbox)).total;
  const started = Date.now();
  await post(sys, id, topic);
  let expandedAt: number | undefined;
  await until('delivery', async () => {
    // undefined until a demuxer has started the fan-out; expanding until its last chunk is done.
    const state = expandedAt === undefined ? await fanoutState(sys, id) : undefined;
    if (state !== undefined && state !== 'expanding') expandedAt = Date.now();
    return (await sandboxStats(sys.sandbox)).total - before >= expected;
  });
  const ended = Date.now();
  expandedAt ??= ended;
  return { expansionPerS: Math.round(expected / ((expandedAt - started) / 1000)), deliveredPerS: Math.round(expected / ((ended - started) / 1000)) };
}

/** Cancel after `afterMs`; the time from the cancel to the last push the sandbox receives. */
async function cancelMidway(sys: System, id: string, topic: string, afterMs: number): Promise<{ cancelToLastPushMs: number; sentBeforeCancel: number }> {
  const before = (await sandboxStats(sys.sandbox)).total;
  await post(sys, id, topic);
  await sleep(afterMs);
  const cancelledAt = Date.now();
  const sentBeforeCancel = (await sandboxStats(sys.sandbox)).total - before;
  await cancelJob(sys.database.db, id);
  let last = (await sandboxStats(sys.sandbox)).total;
  let lastChange = Date.now();
  while (Date.now() - lastChange < 3000) {
    await sleep(20);
    const now = (await sandboxStats(sys.sandbox)).total;
    if (now !== last) {
      last = now;
      lastChange = Date.now();
    }
  }
  return { cancelToLastPushMs: Math.max(0, lastChange - cancelledAt), sentBeforeCancel };
}

/**
 * SIGKILL the first demuxer 1.5 s into a fan-out, restart it, count lost and duplicate pushes per
 * token at the sandbox. Its requests are read every half second as they come: the sandbox keeps
 * only its most recent ones.
 */
async function killMidway(sys: System, id: string, topic: string, expected: number): Promise<{ lost: number; duplicates: number; seconds: number }> {
  const startSeq = (await sandboxStats(sys.sandbox)).total;
  const counts = new Map<string, number>();
  let read = startSeq;
  const readNew = async (): Promise<void> => {
    for (const r of await recordsAfter<{ seq: number; status: number; token?: string }>(sys.sandbox, read, ['seq', 'status', 'token'])) {
      read = r.seq;
      if (r.status === 200 && r.token !== undefined) counts.set(r.token, (counts.get(r.token) ?? 0) + 1);
    }
  };
  const started = Date.now();
  await post(sys, id, topic);
  await until('expansion under way', async () => (await fanoutState(sys, id)) === 'expanding', 60_000, 20);
  await sleep(1500);
  const demuxer = sys.service('demuxer');
  await demuxer.stop('SIGKILL');
  await demuxer.start();
  await until('every push of the killed fan-out', async () => {
    await readNew();
    return read - startSeq >= expected;
  }, 3_600_000, 500);
  // Duplicates may still be on their way.
  await sleep(3000);
  await readNew();
  const duplicates = [...counts.values()].filter((n) => n > 1).length;
  return { lost: expected - counts.size, duplicates, seconds: Math.round((Date.now() - started) / 100) / 10 };
}

async function main(): Promise<void> {
  await buildServices();
  const sys = await startSystem({ env: { FANOUT_CHUNK_SIZE: String(CHUNK) } });
  const rss = new Map<string, number>();
  const sampleRss = (): void => {
    for (const [name, s] of sys.services) rss.set(name, Math.max(rss.get(name) ?? 0, peakRssMb(s.pid) || 0));
  };
  const sampler = setInterval(sampleRss, 1000);
  try {
    await startExtraService(sys, 'demuxer');
    const t0 = Date.now();
    // seedAudience (libs/db): one INSERT … SELECT generate_series per table; half APNs, half FCM.
    await seedAudience(sys.database.db, { app: 'demo', devices: DEVICES, topic: 'bench-all' });
    await topicOfFirst(sys, 'bench-limited', Math.ceil(DEVICES / 10));
    await topicOfFirst(sys, 'bench-kill', KILL_DEVICES);
    const seedSeconds = (Date.now() - t0) / 1000;
    console.error(`seeded ${DEVICES} devices in ${seedSeconds.toFixed(1)} s`);
    const free = await sendAll(sys, `fanout-free-${t0}`, 'bench-all', DEVICES);
    console.error('limiter off', free);
    await sys.database.db.rateLimits.set({ platform: 'apns' }, LIMIT / 2);
    await sys.database.db.rateLimits.set({ platform: 'fcm' }, LIMIT / 2);
    const limited = await sendAll(sys, `fanout-limited-${t0}`, 'bench-limited', Math.ceil(DEVICES / 10));
    console.error(`limited to ${LIMIT}/s`, limited);
    await sys.database.db.rateLimits.set({ platform: 'apns' }, 1_000_000);
    await sys.database.db.rateLimits.set({ platform: 'fcm' }, 1_000_000);
    await sleep(2000);
    const cancel = await cancelMidway(sys, `fanout-cancel-${t0}`, 'bench-all', 5000);
    console.error('cancel', cancel);
    sampleRss();
    const kill = await killMidway(sys, `fanout-kill-${t0}`, 'bench-kill', KILL_DEVICES);
    console.error('kill', kill);
    sampleRss();
    const result = {
      devices: DEVICES,
      chunk: CHUNK,
      seedSeconds,
      expansionDevicesPerS: free.expansionPerS,
      deliveredPerSLimiterOff: free.deliveredPerS,
      limit: LIMIT,
      deliveredPerSAtLimit: limited.deliveredPerS,
      cancelToLastPushMs: cancel.cancelToLastPushMs,
      sentBeforeCancel: cancel.sentBeforeCancel,
      killDevices: KILL_DEVICES,
      killLost: kill.lost,
      killDuplicates: kill.duplicates,
      peakRssMb: Object.fromEntries(rss),
    };
    console.table(Object.entries(result).filter(([k]) => k !== 'peakRssMb').map(([k, v]) => ({ measure: k, value: v })));
    console.table(Object.entries(result.peakRssMb).map(([service, mb]) => ({ service, peakRssMb: mb })));
    mkdirSync('test-results', { recursive: true });
    writeFileSync('test-results/fanout-bench.json', `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    clearInterval(sampler);
    await sys.stop();
  }
}

await main();
