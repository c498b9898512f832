/**
 * `npm run bench:providers`: pushes/s and CPU per push from each device provider (APNs through
 * @parse/node-apn, FCM through firebase-admin) straight to the sandbox, the sandbox in a process
 * of its own so the provider's CPU (this process) and the sandbox's are counted apart. Rounds
 * alternate APNs and FCM (PROVIDER_BENCH_ROUNDS, default 3), each PROVIDER_BENCH_SECONDS (default
 * 8) after a 1 s warm-up, PROVIDER_BENCH_CONCURRENCY sends in flight (default 500, the pushers'
 * default prefetch; PROVIDER_BENCH_PLATFORMS=fcm for one); medians of the rounds on the last lines,
 * then FCM against APNs, round by round. The platform that goes first changes every round, so
 * neither always meets what the other left in the sandbox (its records, its collections).
 * PROVIDER_BENCH_PROFILE_DIR=<dir> writes the sandbox's CPU profile there (run this process
 * under `node --cpu-prof` for the provider's); tools/bench/src/profile-summary.ts reads both.
 */
import { derivePushId, type DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { createApnsProvider, createFcmProvider, loadSandboxSettings, type PushProvider } from '@herald/providers';
import { buildServices } from '../../../infra/local/build-services.ts';
import { startSandboxProcess } from '../../../test/support/sandbox-process.ts';
import { cpuMs } from './proc.ts';
import { alternating, median, wholeMedian } from './stats.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const ROUNDS = env('PROVIDER_BENCH_ROUNDS', 3);
const SECONDS = env('PROVIDER_BENCH_SECONDS', 8);
const CONCURRENCY = env('PROVIDER_BENCH_CONCURRENCY', 500);
const TOPIC = 'com.herald.sandbox';
const PLATFORMS = (process.env['PROVIDER_BENCH_PLATFORMS'] ?? 'apns,fcm').split(',').filter((p): p is Platform => p === 'apns' || p === 'fcm');

type Platform = 'apns' | 'fcm';
interface Round {
  platform: Platform;
  pushesPerSecond: number;
  providerCpuUsPerPush: number;
  sandboxCpuUsPerPush: number;
  failed: number;
}

let n = 0;
function devicePush(platform: Platform): DevicePush {
  n += 1;
  const token = platform === 'apns' ? n.toString(16).padStart(64, 'a') : `bench-${n}:APA91b${'x'.repeat(40)}`;
  return {
    version: 1, pushId: derivePushId('provider-bench', String(n)), jobId: 'provider-bench', deviceId: String(n), app: 'demo', platform, token,
    userId: 'u', content: { title: 'bench', body: 'provider → sandbox', data: { n: String(n) } }, priority: 'high', acceptedAt: new Date().toISOString(),
  };
}

/** Built before the clock starts (and reused round robin), so their making is not counted as the provider's CPU. */
const POOL = 20_000;
const pools = new Map<Platform, DevicePush[]>();
const poolOf = (platform: Platform): DevicePush[] => {
  let pool = pools.get(platform);
  if (pool === undefined) pools.set(platform, (pool = Array.from({ length: POOL }, () => devicePush(platform))));
  return pool;
};

/** `CONCURRENCY` senders for `seconds`; counts what the provider answered. */
async function drive(provider: PushProvider, platform: Platform, seconds: number): Promise<{ sent: number; failed: number; seconds: number }> {
  const pool = poolOf(platform);
  let next = 0;
  let sent = 0;
  let failed = 0;
  const until = performance.now() + seconds * 1000;
  const worker = async (): Promise<void> => {
    while (performance.now() < until) {
      const result = await provider.send(pool[next++ % POOL] as DevicePush, { apnsTopic: TOPIC });
      if (result.kind === 'delivered') sent++;
      else failed++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { sent, failed, seconds: (performance.now() - started) / 1000 };
}

async function round(platform: Platform, stateDir: string, sandboxPid: number): Promise<Round> {
  const logger = createLogger({ service: 'provider-bench', level: 'warn', format: 'json' });
  const settings = await loadSandboxSettings(stateDir);
  const provider = platform === 'apns' ? await createApnsProvider(settings.apns, logger) : await createFcmProvider(settings.fcm, logger);
  try {
    await drive(provider, platform, 1);
    const cpu = process.cpuUsage();
    const sandboxCpu = cpuMs(sandboxPid);
    const r = await drive(provider, platform, SECONDS);
    const used = process.cpuUsage(cpu);
    const sandboxUs = (cpuMs(sandboxPid) - sandboxCpu) * 1000;
    const delivered = Math.max(1, r.sent);
    return {
      platform,
      pushesPerSecond: Math.round(r.sent / r.seconds),
      providerCpuUsPerPush: Math.round((used.user + used.system) / delivered),
      sandboxCpuUsPerPush: Math.round(sandboxUs / delivered),
      failed: r.failed,
    };
  } finally {
    await provider.close();
  }
}

await buildServices();
const profile = process.env['PROVIDER_BENCH_PROFILE_DIR'];
const sandbox = await startSandboxProcess({
  maxRecords: 10_000,
  nodeFlags: profile !== undefined ? `--cpu-prof --cpu-prof-dir=${profile}` : '',
  stdio: ['ignore', 'inherit', 'inherit'],
});
try {
  const byRound: Round[][] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const thisRound: Round[] = [];
    byRound.push(thisRound);
    for (const platform of alternating(PLATFORMS, i)) {
      const r = await round(platform, sandbox.stateDir, sandbox.child.pid ?? NaN);
      thisRound.push(r);
      console.log(
        `round ${i + 1} ${platform}: ${r.pushesPerSecond} pushes/s, provider CPU ${r.providerCpuUsPerPush} µs/push, sandbox CPU ${r.sandboxCpuUsPerPush} µs/push${r.failed > 0 ? `, ${r.failed} failed` : ''}`,
      );
    }
  }
  for (const platform of PLATFORMS) {
    const mine = byRound.flat().filter((r) => r.platform === platform);
    const label = platform === 'apns' ? 'APNs' : 'FCM';
    console.log(
      `${label} provider → sandbox (median of ${mine.length}, ${CONCURRENCY} in flight, ${SECONDS} s): ${wholeMedian(mine.map((r) => r.pushesPerSecond))} pushes/s, ` +
        `provider CPU ${wholeMedian(mine.map((r) => r.providerCpuUsPerPush))} µs/push (sandbox ${wholeMedian(mine.map((r) => r.sandboxCpuUsPerPush))} µs/push)`,
    );
  }
  const pairs = byRound.flatMap((rs) => {
    const apns = rs.find((r) => r.platform === 'apns');
    const fcm = rs.find((r) => r.platform === 'fcm');
    return apns === undefined || fcm === undefined ? [] : [{ apns, fcm }];
  });
  if (pairs.length > 0) {
    const ratio = (f: (r: Round) => number): string => median(pairs.map((p) => f(p.fcm) / f(p.apns))).toFixed(2);
    console.log(`FCM/APNs, the median of ${pairs.length} rounds: throughput ${ratio((r) => r.pushesPerSecond)}, provider CPU a push ${ratio((r) => r.providerCpuUsPerPush)}`);
  }
} finally {
  await sandbox.close();
}
