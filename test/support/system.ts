import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHeraldClient, type HeraldClient } from '@herald/client';
import { createLogger } from '@herald/logging';
import { startSandbox, type Sandbox } from '@herald/sandbox';
import { createTestDatabase, createTestVhost, MANAGEMENT_API, type LocalCluster, type TestVhost } from '@herald/testing';
import { bundleOf } from '../../infra/local/build-services.ts';
import { prepareEnvironment } from '../../infra/local/prepare.ts';
import { SERVICES, type ServiceName } from '../../infra/local/service-list.ts';
import { startSandboxProcess, type SandboxProcess, type SandboxProcessOptions } from './sandbox-process.ts';
import { ServiceProcess } from './service-process.ts';

type TestDatabase = Awaited<ReturnType<typeof createTestDatabase>>;

export const DEMO_APP = { id: 'demo', apnsTopic: 'com.herald.demo' };
/** Short retry schedule so tests see retries and parking in seconds. */
export const TEST_RETRY_DELAYS_MS = [200, 400];

export interface System {
  vhost: TestVhost;
  /** The management API of the broker (or of every node of the cluster) the system runs on. */
  managementApi: string;
  /** The local three-node cluster, when the system runs on it. */
  cluster?: LocalCluster;
  database: TestDatabase;
  sandbox: Sandbox;
  /** The sandbox, when it runs as a process of its own (startSystem's `sandboxProcess`). */
  sandboxProcess?: SandboxProcess;
  client: HeraldClient;
  services: Map<string, ServiceProcess>;
  /** The environment every service of this system was started with. */
  env: Record<string, string>;
  /** An operator key (kind operator, name "e2e") for the monitor's dashboard and the admin routes. */
  operatorKey: string;
  service(name: ServiceName): ServiceProcess;
  stop(): Promise<void>;
}

/**
 * The whole of Herald for one test file: its own vhost, schema and sandbox, every service
 * as a real process, and a client to publish with.
 */
export async function startSystem(
  options: {
    only?: readonly string[];
    env?: Record<string, string>;
    cluster?: LocalCluster;
    /** Requests the sandbox keeps (its default is 20,000). */
    sandboxMaxRecords?: number;
    /**
     * Run the sandbox as a process of its own (sandbox-process.ts) instead of in the test's
     * process: for the rate tests, at a raised priority (`niceness`), so its receive times do not
     * wait on the test process's scheduling; for the benchmarks, so its CPU and memory are counted
     * apart (`nodeFlags` for a CPU profile). System.sandboxProcess is then that process.
     */
    sandboxProcess?: Pick<SandboxProcessOptions, 'niceness' | 'nodeFlags'>;
    /**
     * A test that makes the sandbox warn on purpose (sends a push the provider takes and then
     * mishandles) says so here; otherwise stop() fails when the sandbox warned about any request.
     */
    sandboxWarnings?: 'expected';
    /** The retry schedule and delay queues (default TEST_RETRY_DELAYS_MS): longer ones for what defers by seconds. */
    retryDelaysMs?: readonly number[];
  } = {},
): Promise<System> {
  const missing = SERVICES.map((s) => bundleOf(s.name)).filter((b) => !existsSync(b));
  if (missing.length > 0) throw new Error(`service bundles missing (${missing[0]}, …): run \`npm run build\` (the tests' global setup and the benchmarks build them)`);
  const logger = createLogger({ service: 'e2e', level: 'warn', format: 'json' });
  const vhost = options.cluster === undefined ? await createTestVhost('e2e') : await options.cluster.createVhost('e2e');
  const managementApi = options.cluster?.apiUrls ?? MANAGEMENT_API;
  const database = await createTestDatabase('e2e');
  const stateDir = await mkdtemp(join(tmpdir(), 'herald-sandbox-'));
  const maxRecords = options.sandboxMaxRecords === undefined ? {} : { maxRecords: options.sandboxMaxRecords };
  const sandboxProcess = options.sandboxProcess === undefined ? undefined : await startSandboxProcess({ stateDir, ...options.sandboxProcess, ...maxRecords });
  const sandbox: Sandbox = sandboxProcess ?? (await startSandbox({ stateDir, logger, ...maxRecords }));
  await prepareEnvironment({
    amqpUrl: vhost.amqpUrl,
    databaseUrl: database.url,
    schema: database.schema,
    retryDelaysMs: options.retryDelaysMs ?? TEST_RETRY_DELAYS_MS,
    logger,
    seedApps: [DEMO_APP],
  });
  const operatorKey = (await database.db.apiKeys.createOperator('e2e')).key;
  const env = {
    AMQP_URL: vhost.amqpUrl,
    DATABASE_URL: database.url,
    DATABASE_SCHEMA: database.schema,
    SANDBOX_STATE_DIR: stateDir,
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    HTTP_PORT: '0',
    API_PORT: '0',
    HERALD_RETRY_DELAYS_MS: (options.retryDelaysMs ?? TEST_RETRY_DELAYS_MS).join(','),
    PUSHER_RETRY_DELAYS_MS: (options.retryDelaysMs ?? TEST_RETRY_DELAYS_MS).join(','),
    // Apple's 15 minutes before a 5xx is tried again, against the sandbox's injected 5xx: the test schedule instead.
    APNS_SERVER_ERROR_RETRY_MS: '0',
    APP_CACHE_TTL_MS: '0',
    SHUTDOWN_TIMEOUT_MS: '10000',
    WEBHOOK_ALLOW_HTTP_LOCALHOST: 'true',
    ...(options.cluster === undefined ? {} : { RABBITMQ_API_URL: managementApi }),
    ...options.env,
  };
  const services = new Map<string, ServiceProcess>();
  for (const s of SERVICES.filter((s) => options.only === undefined || options.only.includes(s.name))) {
    services.set(s.name, new ServiceProcess(s.name, s.name, env));
  }
  await Promise.all([...services.values()].map((s) => s.start()));
  const client = await createHeraldClient({ url: vhost.amqpUrl, logger, connectionName: 'e2e-client' });
  return {
    vhost,
    managementApi,
    ...(options.cluster === undefined ? {} : { cluster: options.cluster }),
    database,
    sandbox,
    ...(sandboxProcess === undefined ? {} : { sandboxProcess }),
    client,
    services,
    env,
    operatorKey,
    service(name) {
      const s = services.get(name);
      if (s === undefined) throw new Error(`service ${name} is not part of this system`);
      return s;
    },
    async stop() {
      let warned: string | undefined;
      try {
        await Promise.all([...services.values()].map((s) => s.stop('SIGTERM')));
        await client.close();
        if (options.sandboxWarnings !== 'expected') warned = await sandboxWarned(sandbox);
      } finally {
        await sandbox.close();
        await vhost.delete();
        await database.drop();
        await rm(stateDir, { recursive: true, force: true });
      }
      if (warned !== undefined) throw new Error(warned);
    },
  };
}

/**
 * What the sandbox warned about, if it warned: requests Apple or Google would answer 200 and then
 * mishandle (a background push that cannot wake the app, an alert that shows nothing). Herald must
 * send none, so a system whose test did not expect any fails when it stops, naming the first few.
 */
async function sandboxWarned(sandbox: Sandbox): Promise<string | undefined> {
  type Warned = { warned: { total: number; first: Array<{ seq: number; platform: string; path: string; warnings: string[] }> } };
  let stats: Warned;
  try {
    stats = (await (await fetch(`${sandbox.settings.control.url}/stats`)).json()) as Warned;
  } catch (err) {
    // A sandbox that died or stopped answering has failed its test already; say so, and clean up.
    console.warn(`system stop: could not read the sandbox's warnings: ${(err as Error).message}`);
    return undefined;
  }
  if (stats.warned.total === 0) return undefined;
  const first = stats.warned.first.map((w) => `#${w.seq} ${w.platform} ${w.path}: ${w.warnings.join('; ')}`).join('\n  ');
  return `the sandbox answered ${stats.warned.total} of Herald's requests 2xx with warnings (the provider would take them and mishandle them); the first:\n  ${first}`;
}

/** The system's sandbox process (started with `sandboxProcess`); throws if it runs in this process. */
export function sandboxProcessOf(sys: System): SandboxProcess {
  if (sys.sandboxProcess === undefined) throw new Error('this system runs its sandbox in-process: start it with startSystem({ sandboxProcess: {} })');
  return sys.sandboxProcess;
}

/**
 * Start one more process of a service (e.g. a second and third apns-pusher) with the system's
 * environment plus `env`; stop() stops it with the rest. Registered as `<name>#<n>`.
 */
export async function startExtraService(sys: System, name: ServiceName, env: Record<string, string> = {}): Promise<ServiceProcess> {
  if (!SERVICES.some((s) => s.name === name)) throw new Error(`unknown service ${name}`);
  let n = 2;
  while (sys.services.has(`${name}#${n}`)) n++;
  const extra = new ServiceProcess(`${name}#${n}`, name, { ...sys.env, ...env });
  sys.services.set(extra.name, extra);
  await extra.start();
  return extra;
}
