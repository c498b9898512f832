/**
 * `npm start`: bring up RabbitMQ and PostgreSQL, apply topology and migrations, then run the
 * sandbox and every service under a supervisor that owns them (supervisor.ts).
 *
 * - One per state directory: a second `npm start` says what is running and exits 1 (start-lock.ts);
 *   a fixed port another process holds is reported before anything starts (port-check.ts).
 * - SIGINT, SIGTERM and SIGHUP stop every service (SIGTERM each, SIGKILL after the bound) and then
 *   the supervisor. So does the death of the process that started it (npm: `npm start` execs this
 *   process, so npm's SIGINT/SIGTERM forwarding reaches it, and npm's own death on SIGHUP or
 *   SIGKILL is seen within half a second, parent-watch.mjs). Services stop by themselves when the
 *   supervisor dies, even by SIGKILL (supervised-service.mjs).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEFAULT_WEB_PUSH_HOSTS } from '@herald/contracts';
import { bool, commonConfig, int, loadConfigOrExit, optionalStr, retryScheduleConfig, str } from '@herald/config';
import { createLogger } from '@herald/logging';
import { buildServices } from './build-services.ts';
import { currentParentPid, watchParent } from './parent-watch.mjs';
import { localVapidEnv } from './local-vapid.ts';
import { busyPorts } from './port-check.ts';
import { prepareEnvironment } from './prepare.ts';
import { SANDBOX, SERVICES } from './service-list.ts';
import { acquireStartLock, describeHolder, ownStartTime, survivingServices, type StartLock } from './start-lock.ts';
import { Supervisor } from './supervisor.ts';

const port = (description: string, fallback: string) => int(description, { default: fallback, min: 0, max: 65535 });
const config = loadConfigOrExit(
  {
    AMQP_URL: commonConfig.AMQP_URL,
    DATABASE_URL: commonConfig.DATABASE_URL,
    DATABASE_SCHEMA: commonConfig.DATABASE_SCHEMA,
    LOG_LEVEL: commonConfig.LOG_LEVEL,
    LOG_FORMAT: commonConfig.LOG_FORMAT,
    SHUTDOWN_TIMEOUT_MS: commonConfig.SHUTDOWN_TIMEOUT_MS,
    HERALD_STATE_DIR: str('Where `npm start` keeps its lock (start.lock) and the sandbox state', { default: '.herald' }),
    SANDBOX_STATE_DIR: optionalStr('Sandbox state directory (default: <HERALD_STATE_DIR>/sandbox)'),
    ...retryScheduleConfig,
    HERALD_CLUSTER: bool('Run on a local three-node RabbitMQ cluster (infra/local/rabbitmq-cluster.sh) instead of the single node; also `npm start -- --cluster`', { default: 'false' }),
    // The fixed ports, checked before anything starts (0: a free port, never busy).
    API_PORT: port('HTTP API port', '8080'),
    HTTP_PORT: port("The monitor's port (every other service picks a free ops port under npm start)", '9470'),
    SANDBOX_APNS_PORT: port('Sandbox APNs port', '2197'),
    SANDBOX_FCM_PORT: port('Sandbox FCM port', '4443'),
    SANDBOX_WEB_PORT: port('Sandbox Web Push port', '4445'),
    SANDBOX_CONTROL_PORT: port('Sandbox control port', '4480'),
  },
  process.env,
);
const logger = createLogger({ service: 'herald-start', level: config.LOG_LEVEL, format: config.LOG_FORMAT });
const cluster = config.HERALD_CLUSTER || process.argv.includes('--cluster');
/** On the local cluster every connection gets the three nodes (same vhost as AMQP_URL), the monitor their three APIs. */
const clusterEnv: NodeJS.ProcessEnv = cluster
  ? {
      AMQP_URLS: [5701, 5702, 5703].map((p) => withPort(config.AMQP_URL.split(',')[0] ?? '', p)).join(','),
      RABBITMQ_API_URL: [15701, 15702, 15703].map((p) => `http://guest:guest@127.0.0.1:${p}/api`).join(','),
    }
  : {};
const amqpUrl = clusterEnv['AMQP_URLS'] ?? config.AMQP_URL;

function withPort(url: string, port: number): string {
  const u = new URL(url);
  u.port = String(port);
  return u.toString();
}
const childFormat = process.stdout.isTTY ? 'pretty' : 'json';
const stateDir = resolve(config.HERALD_STATE_DIR);
const sandboxDir = resolve(config.SANDBOX_STATE_DIR ?? join(stateDir, 'sandbox'));
/** A service gets SHUTDOWN_TIMEOUT_MS for in-flight work and 5 s more to close (libs/runtime); then it is killed. */
const stopBoundMs = config.SHUTDOWN_TIMEOUT_MS + 7_000;

// --- one npm start per state directory ------------------------------------------------------
mkdirSync(stateDir, { recursive: true });
const taken = acquireStartLock(join(stateDir, 'start.lock'), {
  pid: process.pid,
  pidStart: ownStartTime(),
  since: new Date().toISOString(),
  cwd: process.cwd(),
  stateDir,
  services: [],
});
if (taken.kind === 'held') {
  logger.error({ runningPid: taken.holder.pid, since: taken.holder.since, stateDir }, describeHolder(taken.holder));
  process.exit(1);
}
const lock: StartLock = taken.lock;
// The web-pusher's VAPID keys for apps without their own (local-vapid.ts).
const vapidEnv = await localVapidEnv(stateDir, process.env);

const supervisor = new Supervisor({
  logger,
  stopBoundMs,
  env: (service) => ({
    ...process.env,
    ...(service === 'web-pusher' ? vapidEnv : {}),
    ...clusterEnv,
    LOG_FORMAT: process.env['LOG_FORMAT'] ?? childFormat,
    SANDBOX_STATE_DIR: sandboxDir,
    // HTTP_PORT is the monitor's: the other services could not all listen on one port.
    HTTP_PORT: service === 'monitor' ? String(config.HTTP_PORT) : '0',
    // Local only: webhook subscriptions may call back to http://localhost receivers.
    WEBHOOK_ALLOW_HTTP_LOCALHOST: process.env['WEBHOOK_ALLOW_HTTP_LOCALHOST'] ?? 'true',
  }),
  onChange: () => lock.update(supervisor.records()),
});

// --- stopping ---------------------------------------------------------------------------------
const startup = new AbortController();
let stopRequestedAt: number | undefined = undefined;

async function stop(reason: string, failed = false): Promise<void> {
  if (stopRequestedAt !== undefined) {
    // Ctrl-C in a terminal reaches npm and this process at once, and npm forwards it: one press.
    if (Date.now() - stopRequestedAt < 1_000) return;
    logger.warn({ reason }, 'asked again: killing every service now');
    supervisor.killAll();
    lock.release();
    process.exit(1);
  }
  stopRequestedAt = Date.now();
  startup.abort();
  logger.info({ reason, boundMs: stopBoundMs }, 'stopping every service (Ctrl-C again to kill them at once)');
  const killed = await supervisor.stop();
  if (killed.length > 0) logger.warn({ killed }, `killed what had not stopped within ${stopBoundMs / 1000} s`);
  lock.release();
  logger.info('every service stopped');
  process.exit(failed || killed.length > 0 ? 1 : 0);
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(signal));
watchParent(currentParentPid() ?? process.ppid, () => void stop('the process that started npm start exited'));
process.on('exit', () => {
  supervisor.killAll();
  lock.release();
});
// A closed terminal or pipe must not stop the supervisor halfway through stopping its services.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
process.on('uncaughtException', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE' || err.code === 'EIO') return;
  logger.fatal({ err }, 'npm start failed');
  void stop('npm start failed', true);
});

// --- start ------------------------------------------------------------------------------------
if (taken.stale !== undefined) {
  const stale = taken.stale;
  logger.warn(
    { pid: stale.pid, since: stale.since },
    'the npm start that last held this state directory is gone (killed?); taking over',
  );
  const left = survivingServices(stale);
  if (left.length > 0) {
    logger.warn({ services: left.map((s) => `${s.name} (pid ${s.pid})`) }, 'stopping the services it left behind');
    signalAll(left, 'SIGTERM');
    await until(() => survivingServices(stale).length === 0, stopBoundMs);
    signalAll(survivingServices(stale), 'SIGKILL');
  }
}

const busy = await busyPorts([
  { port: config.API_PORT, setting: 'API_PORT', service: 'HTTP API' },
  { port: config.HTTP_PORT, setting: 'HTTP_PORT', service: 'monitor' },
  { port: config.SANDBOX_APNS_PORT, setting: 'SANDBOX_APNS_PORT', service: 'APNs sandbox' },
  { port: config.SANDBOX_FCM_PORT, setting: 'SANDBOX_FCM_PORT', service: 'FCM sandbox' },
  { port: config.SANDBOX_WEB_PORT, setting: 'SANDBOX_WEB_PORT', service: 'Web Push sandbox' },
  { port: config.SANDBOX_CONTROL_PORT, setting: 'SANDBOX_CONTROL_PORT', service: 'sandbox control API' },
]);
if (busy.length > 0) {
  logger.error(
    { busy },
    `cannot start: ${busy.join('; ')}. Is another Herald running (from another directory)? Stop it, or give this one other ports (0 picks a free one)`,
  );
  lock.release();
  process.exit(1);
}

/** Every host of a setting (a list of AMQP URLs, or a PostgreSQL URL with several hosts) is this machine. */
const local = (setting: string): boolean =>
  setting
    .split(',')
    .map((part) => /^(?:[a-z]+:\/\/)?(?:[^@/]*@)?(\[[^\]]*\]|[^:/?,]*)/.exec(part.trim())?.[1] ?? '')
    .every((host) => ['127.0.0.1', 'localhost', '[::1]'].includes(host));
if (local(config.AMQP_URL) && local(config.DATABASE_URL)) {
  const code = await new Promise<number | null>((done) => {
    const child = spawn('bash', [join(import.meta.dirname, 'services.sh')], { stdio: 'inherit' });
    startup.signal.addEventListener('abort', () => child.kill('SIGTERM'));
    child.on('exit', (c) => done(c));
  });
  if (code !== 0 && !startup.signal.aborted) {
    lock.release();
    process.exit(code ?? 1);
  }
} else {
  logger.info('AMQP_URL or DATABASE_URL points to another machine: not managing local RabbitMQ and PostgreSQL');
}
if (cluster && !startup.signal.aborted) {
  const code = await new Promise<number | null>((done) => {
    const child = spawn('bash', [join(import.meta.dirname, 'rabbitmq-cluster.sh'), 'start'], { stdio: 'inherit' });
    startup.signal.addEventListener('abort', () => child.kill('SIGTERM'));
    child.on('exit', (c) => done(c));
  });
  if (code !== 0 && !startup.signal.aborted) {
    lock.release();
    process.exit(code ?? 1);
  }
  logger.info({ nodes: 3 }, 'on the local RabbitMQ cluster (stop it with `bash infra/local/rabbitmq-cluster.sh stop`)');
}

await prepareEnvironment({
  amqpUrl,
  databaseUrl: config.DATABASE_URL,
  schema: config.DATABASE_SCHEMA,
  retryDelaysMs: config.HERALD_RETRY_DELAYS_MS,
  logger,
  // The demo app's browser subscriptions may use the sandbox's push service (and the browsers' own).
  seedApps: [{ id: 'demo', apnsTopic: 'com.herald.demo', webPushHosts: ['127.0.0.1', 'localhost', ...DEFAULT_WEB_PUSH_HOSTS] }],
});
await buildServices();
logger.info('services built into dist/services');

const sandboxFile = join(sandboxDir, 'sandbox.json');
const startedAt = Date.now();
supervisor.start(SANDBOX.name);
await until(
  () => startup.signal.aborted || (existsSync(sandboxFile) && statSync(sandboxFile).mtimeMs >= startedAt - 1000),
  Infinity,
);
for (const s of SERVICES) supervisor.start(s.name);
if (!startup.signal.aborted) {
  logger.info(
    { services: [SANDBOX.name, ...SERVICES.map((s) => s.name)], pid: process.pid, stateDir },
    'Herald is running; try `npx herald register` and `npx herald send` (Ctrl-C stops)',
  );
}

function signalAll(services: ReadonlyArray<{ pid: number | undefined }>, signal: NodeJS.Signals): void {
  for (const { pid } of services) {
    if (pid === undefined || pid <= 1) continue;
    try {
      process.kill(pid, signal);
    } catch {
      // gone meanwhile
    }
  }
}

async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}
