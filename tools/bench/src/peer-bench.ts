/**
 * `npm run bench:peer`: Herald side by side with `@parse/push-adapter` (issue 19 part 2), in one
 * invocation, against one sandbox process (APNs and FCM stand-ins) and the same PEER_PUSHES device
 * tokens (half APNs, half FCM: PEER_PUSHES/2 users with one device of each).
 *   (a) the adapter, in its own process (peer-adapter.ts), sends to every token as Parse Server
 *       calls it: `send(data, installations)`, PEER_BATCH installations a call, PEER_IN_FLIGHT calls
 *       in flight;
 *   (b) Herald end to end: jobs published with confirms (bench-load.ts, as `npm run bench`),
 *       demuxer → pushers → sandbox. A job names the users whose devices one adapter call sends to
 *       (PEER_HERALD_USERS_PER_JOB, default PEER_BATCH / 2: the same notification to the same
 *       devices, as a team would publish it to Herald); 1 for one job per user.
 * Each is measured at the sandbox (its exact counters of 200 answers) from the first send until the
 * last push arrived; CPU per delivered push comes from /proc over that window, per process. They
 * alternate for PEER_ROUNDS rounds after a warm-up; medians at the end, then the ratio line.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildServices } from '../../../infra/local/build-services.ts';
import type { SandboxProcess } from '../../../test/support/sandbox-process.ts';
import { sandboxProcessOf, startSystem, type System } from '../../../test/support/system.ts';
import { publishBenchJobs, seedBenchDevices } from './bench-load.ts';
import { formatMachine, machineCpu, machineShares, peakRssMb, type MachineShares } from './proc.ts';
import { listenerPids, PostgresProcesses, ProcessSetCpu } from './proc-sockets.ts';
import type { SendCommand, SentReport } from './peer-adapter.ts';
import { formatCpuTable, formatSummary, type Measured } from './peer-report.ts';
import { median } from './stats.ts';
import { sandboxCounted } from './sandbox-feed.ts';
import type { SandboxControl } from '../../../test/support/sandbox-client.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const ROUNDS = env('PEER_ROUNDS', 3);
const PUSHES = Math.floor(env('PEER_PUSHES', 60_000) / 2) * 2;
const WARMUP = Math.floor(env('PEER_WARMUP_PUSHES', 10_000) / 2) * 2;
const BATCH = env('PEER_BATCH', 100);
const IN_FLIGHT = env('PEER_IN_FLIGHT', 8);
const CONCURRENCY = env('BENCH_PUBLISH_CONCURRENCY', 64);
const USERS_PER_JOB = Math.max(1, Math.floor(env('PEER_HERALD_USERS_PER_JOB', BATCH / 2)));
const TIMEOUT_MS = env('PEER_ROUND_TIMEOUT_SECONDS', 300) * 1000;

const controlOf = (sandbox: SandboxProcess): SandboxControl => ({ settings: { control: { url: sandbox.controlUrl } } });

/** Pushes the sandbox answered 200, APNs and FCM together (exact counters, whatever the record window). */
const accepted = (sandbox: SandboxProcess): Promise<number> => sandboxCounted(controlOf(sandbox), 0, 0, 200);

/**
 * Waits until the sandbox has answered `target` pushes 200 in all, or `deadline`: one request a
 * round, answered as the count is reached (sandboxCounted). Polling `/stats` every 50 ms instead
 * cost the load generator about 2 ms of CPU a poll on this machine, 5–6 µs a push of Herald's
 * rounds, whose pushes trickle in after the publishing, against the adapter's one poll a round.
 */
async function waitForAccepted(sandbox: SandboxProcess, target: number, deadline: number): Promise<number> {
  for (;;) {
    const count = await sandboxCounted(controlOf(sandbox), target, Math.min(60_000, deadline - Date.now()), 200);
    if (count >= target || Date.now() >= deadline) return count;
  }
}

/** Processes measured together under one name: what each found process spent over the window. */
type Meters = Record<string, ProcessSetCpu>;

const onePid = (pid: number | undefined): ProcessSetCpu => new ProcessSetCpu(() => (pid === undefined ? [] : [pid]));

/**
 * Start the meters, sample them every second until `work` settles, then once more; CPU ms by name,
 * and the machine's idle and stolen shares over the same window.
 */
async function measure<T>(meters: Meters, work: () => Promise<T>): Promise<{ result: T; cpuMs: Record<string, number>; machine: MachineShares }> {
  const all = Object.values(meters);
  all.forEach((m) => m.start());
  const machineFrom = machineCpu();
  const timer = setInterval(() => all.forEach((m) => m.sample()), 1000);
  try {
    const result = await work();
    all.forEach((m) => m.sample());
    const machine = machineShares(machineFrom, machineCpu());
    return { result, cpuMs: Object.fromEntries(Object.entries(meters).map(([name, m]) => [name, m.spentMs()])), machine };
  } finally {
    clearInterval(timer);
  }
}

const usPerPush = (cpuMs: Record<string, number>, pushes: number): Record<string, number> =>
  Object.fromEntries(Object.entries(cpuMs).map(([name, ms]) => [name, Math.round((ms * 1000) / pushes)]));

/** PostgreSQL's processes, asked each second by the meters of both sides. */
const postgres = new PostgresProcesses();

/** The RabbitMQ node we use (listening on the AMQP URL's port) and PostgreSQL's own server processes: shared, so also a noise gauge. */
function sharedServerMeters(amqpPort: number): Meters {
  const beam = listenerPids(amqpPort);
  return {
    [`beam.smp (RabbitMQ :${amqpPort})`]: new ProcessSetCpu(() => beam),
    'postgres (server processes, shared)': new ProcessSetCpu(() => postgres.server()),
  };
}

interface AdapterProcess {
  child: ChildProcess;
  send(command: Omit<SendCommand, 'kind'>): Promise<SentReport>;
}

async function startAdapter(sandbox: SandboxProcess, tokensFile: string): Promise<AdapterProcess> {
  const child = fork(new URL('./peer-adapter.ts', import.meta.url).pathname, {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, PEER_SANDBOX_STATE_DIR: sandbox.stateDir, PEER_TOKENS_FILE: tokensFile },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = (): Promise<{ kind: string }> =>
    new Promise((resolve, reject) => {
      const onExit = (code: number | null): void => reject(new Error(`the adapter process exited (${code})`));
      child.once('exit', onExit);
      child.once('message', (m: { kind: string }) => {
        child.off('exit', onExit);
        resolve(m);
      });
    });
  await next(); // ready
  return {
    child,
    async send(command) {
      const answer = next();
      child.send({ kind: 'send', ...command } satisfies SendCommand);
      return (await answer) as SentReport;
    },
  };
}

/** (a) the adapter sends `count` pushes; measured at the sandbox. */
async function runAdapter(adapter: AdapterProcess, sandbox: SandboxProcess, count: number, amqpPort: number): Promise<Measured> {
  const meters: Meters = { 'parse-adapter': onePid(adapter.child.pid), sandbox: onePid(sandbox.child.pid), 'load generator': onePid(process.pid) };
  // Not the adapter's: what RabbitMQ and PostgreSQL spent meanwhile is other work on this machine (the noise floor).
  const ambient = sharedServerMeters(amqpPort);
  const before = await accepted(sandbox);
  const started = performance.now();
  const { result, cpuMs, machine } = await measure({ ...meters, ...ambient }, async () => {
    const report = await adapter.send({ count, batch: BATCH, inFlight: IN_FLIGHT });
    return { report, delivered: (await waitForAccepted(sandbox, before + count, Date.now() + 5000)) - before };
  });
  const seconds = (performance.now() - started) / 1000;
  const { report, delivered } = result;
  if (report.failed > 0) console.log(`  adapter: ${report.failed} sends failed`);
  const cpu = usPerPush(cpuMs, delivered);
  const pick = (names: string[]): Record<string, number> => Object.fromEntries(names.map((n) => [n, cpu[n] ?? NaN]));
  return { pushesPerSecond: Math.round(delivered / seconds), delivered, seconds, machine, cpuUsPerPush: pick(Object.keys(meters)), ambientUsPerPush: pick(Object.keys(ambient)) };
}

/** (b) Herald end to end for `count` pushes (jobs of USERS_PER_JOB users, two devices each); measured at the sandbox. */
async function runHerald(sys: System, sandbox: SandboxProcess, count: number, idPrefix: string, amqpPort: number): Promise<Measured> {
  const heraldPids = [...sys.services.values()].map((s) => s.pid).filter((p): p is number => p !== undefined);
  const meters: Meters = {
    ...Object.fromEntries([...sys.services].map(([name, s]) => [name, onePid(s.pid)])),
    ...sharedServerMeters(amqpPort),
    'postgres (backends of herald)': new ProcessSetCpu(() => postgres.backendsOf(() => [...heraldPids, process.pid])),
    sandbox: onePid(sandbox.child.pid),
    'load generator': onePid(process.pid),
  };
  const jobs = Math.ceil(count / 2 / USERS_PER_JOB);
  const before = await accepted(sandbox);
  const started = performance.now();
  const { result: delivered, cpuMs, machine } = await measure(meters, async () => {
    await publishBenchJobs(sys, { users: count / 2, usersPerJob: USERS_PER_JOB, done: (c) => c.n >= jobs, concurrency: CONCURRENCY, counter: { n: 0 }, idPrefix });
    return (await waitForAccepted(sandbox, before + count, Date.now() + TIMEOUT_MS)) - before;
  });
  const seconds = (performance.now() - started) / 1000;
  if (delivered < count) console.log(`  herald: only ${delivered} of ${count} pushes arrived within ${TIMEOUT_MS / 1000} s`);
  return { pushesPerSecond: Math.round(delivered / seconds), delivered, seconds, machine, cpuUsPerPush: usPerPush(cpuMs, delivered) };
}

/** The N tokens both sides send to, as seeded for Herald. */
async function writeTokens(sys: System, file: string): Promise<void> {
  const rows = await sys.database.db.kysely.selectFrom('devices').select(['platform', 'token', 'user_id']).where('app', '=', 'demo').execute();
  const userNo = (u: string | null): number => Number(u?.slice(1));
  const byPlatform = (p: string): string[] => rows.filter((r) => r.platform === p).sort((a, b) => userNo(a.user_id) - userNo(b.user_id)).map((r) => r.token);
  await writeFile(file, JSON.stringify({ apns: byPlatform('apns'), fcm: byPlatform('fcm') }));
}

await buildServices();
let sys: System | undefined;
let adapter: AdapterProcess | undefined;
try {
  // One sandbox process for both: Herald's services and the adapter read its sandbox.json.
  // The adapter sends to the same sandbox: its requests' warnings are not Herald's.
  sys = await startSystem({ env: { LOG_LEVEL: 'info', APP_CACHE_TTL_MS: '5000' }, sandboxMaxRecords: 10_000, sandboxProcess: {}, sandboxWarnings: 'expected' });
  const sandbox = sandboxProcessOf(sys);
  await seedBenchDevices(sys, PUSHES / 2);
  const tokensFile = join(sandbox.stateDir, 'peer-tokens.json');
  await writeTokens(sys, tokensFile);
  adapter = await startAdapter(sandbox, tokensFile);
  console.log(`bench:peer — ${PUSHES} pushes a round (${PUSHES / 2} APNs + ${PUSHES / 2} FCM tokens), ${ROUNDS} rounds, adapter batches of ${BATCH} × ${IN_FLIGHT} in flight, Herald jobs of ${USERS_PER_JOB} user(s) × ${CONCURRENCY} publishes in flight`);
  const runId = Date.now();
  const amqpPort = Number(new URL(sys.env['AMQP_URL'] ?? 'amqp://127.0.0.1:5672').port || 5672);
  if (WARMUP > 0) {
    await runAdapter(adapter, sandbox, WARMUP, amqpPort);
    await runHerald(sys, sandbox, WARMUP, `peer-${runId}-warmup`, amqpPort);
  }
  const rounds: { adapter: Measured; herald: Measured }[] = [];
  for (let i = 1; i <= ROUNDS; i++) {
    const a = await runAdapter(adapter, sandbox, PUSHES, amqpPort);
    console.log(`round ${i} parse-adapter: ${a.pushesPerSecond} pushes/s (${a.delivered} in ${a.seconds.toFixed(1)} s; ${formatMachine(a.machine)})`);
    const h = await runHerald(sys, sandbox, PUSHES, `peer-${runId}-${i}`, amqpPort);
    console.log(`round ${i} herald:        ${h.pushesPerSecond} pushes/s (${h.delivered} in ${h.seconds.toFixed(1)} s; ${formatMachine(h.machine)})`);
    console.log(formatCpuTable(`round ${i}`, h, a));
    rounds.push({ adapter: a, herald: h });
  }
  console.log(`peak RSS MB: sandbox ${peakRssMb(sandbox.child.pid)}, parse-adapter ${peakRssMb(adapter.child.pid)}, ${[...sys.services].map(([n, s]) => `${n} ${peakRssMb(s.pid)}`).join(', ')}`);
  console.log(formatSummary(rounds));
  const ratio = median(rounds.map((r) => r.herald.pushesPerSecond)) / median(rounds.map((r) => r.adapter.pushesPerSecond));
  console.log(`herald/parse-adapter throughput ratio: ${ratio.toFixed(2)}`);
} finally {
  adapter?.child.send({ kind: 'exit' });
  await sys?.stop();
}
