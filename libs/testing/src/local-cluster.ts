import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { isRunning } from '../../../infra/local/process-info.ts';
import { managementRequest } from './management.ts';
import type { TestVhost } from './test-vhost.ts';

const run = promisify(execFile);
const SCRIPT = join(import.meta.dirname, '../../../infra/local/rabbitmq-cluster.sh');
export const CLUSTER_NODES = [1, 2, 3] as const;
export type ClusterNode = (typeof CLUSTER_NODES)[number];

const amqpPort = (n: ClusterNode): number => 5700 + n;
/** Every node's management API, with credentials, comma-separated (a request asks the next when one does not answer). */
export const CLUSTER_API = CLUSTER_NODES.map((n) => `http://guest:guest@127.0.0.1:${15700 + n}/api`).join(',');

/**
 * The three-node RabbitMQ cluster of infra/local/rabbitmq-cluster.sh, for tests: started once
 * (idempotent), vhosts made per test, nodes killed, stopped and started again.
 */
export interface LocalCluster {
  /** Comma-separated AMQP URLs of every node for `vhost` (AMQP_URLS). */
  amqpUrls(vhost: string): string;
  /** Comma-separated management API URLs with credentials (RABBITMQ_API_URL). */
  readonly apiUrls: string;
  /** The AMQP URL of one node. */
  nodeUrl(n: ClusterNode, vhost: string): string;
  /** A fresh vhost whose amqpUrl lists every node. */
  createVhost(prefix: string): Promise<TestVhost>;
  /** The node that leads a quorum queue now. */
  leaderOf(vhost: string, queue: string): Promise<ClusterNode>;
  /** The node a named client connection is on, if it is connected. */
  nodeOfConnection(connectionName: string): Promise<ClusterNode | undefined>;
  /** Starts every node that is down (`rabbitmq-cluster.sh start`) and resolves with what the script reported on stderr. */
  start(): Promise<{ report: string }>;
  kill(n: ClusterNode): Promise<void>;
  stopNode(n: ClusterNode): Promise<void>;
  startNode(n: ClusterNode): Promise<void>;
  /** Nodes whose AMQP port answers a management call. */
  runningNodes(): Promise<ClusterNode[]>;
  /**
   * Raises (or clears) a memory alarm: node 1's high watermark set to 1 MB (or back to RabbitMQ's
   * default 0.4). While it holds, the whole cluster blocks every connection that publishes.
   */
  memoryAlarm(on: boolean): Promise<void>;
}

const script = (...args: string[]): Promise<{ stdout: string; stderr: string }> => run('bash', [SCRIPT, ...args], { timeout: 300_000 });

async function api<T>(method: string, path: string, body?: unknown): Promise<T | undefined> {
  const res = await managementRequest(method, path, body, CLUSTER_API);
  if (!res.ok && res.status !== 404) throw new Error(`cluster management ${method} ${path}: ${res.status} ${res.body}`);
  return res.status === 404 || res.body === '' ? undefined : res.json<T>();
}

const nodeNumber = (erlangNode: string | undefined): ClusterNode | undefined => {
  const m = /^herald-(\d)@/.exec(erlangNode ?? '');
  return m === null ? undefined : (Number(m[1]) as ClusterNode);
};

const amqpUrls = (vhost: string): string => CLUSTER_NODES.map((n) => `amqp://guest:guest@127.0.0.1:${amqpPort(n)}/${encodeURIComponent(vhost)}`).join(',');

const CLUSTER_DIR = process.env['HERALD_CLUSTER_DIR'] ?? '/tmp/herald-rabbitmq-cluster';
/**
 * Written when a test run started the cluster (rather than finding it running), with the pid of
 * the run's main process (TEST_RUN_PID, set by the global setup): that run's teardown stops it.
 */
const STARTED_BY_TESTS = join(CLUSTER_DIR, 'started-by-tests');
/** The test run's main process, whose teardown owns a cluster its tests started (global-setup.ts sets it for the workers). */
export const TEST_RUN_PID = 'HERALD_TEST_RUN_PID';

/**
 * Whether the run of main process `self` may stop a cluster whose marker names `owner`: its own, or
 * one a run left behind (killed before its teardown). Not another run's still going: a `vitest run`
 * of one file beside `npm test` stopped the cluster under the failover spec of the other.
 */
export const ownsClusterMarker = (owner: number, self: number, isAlive: (pid: number) => boolean = (pid) => isRunning(pid, undefined)): boolean =>
  owner === self || !Number.isInteger(owner) || owner <= 0 || !isAlive(owner);

const answers = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.setTimeout(1_000, () => socket.destroy());
    socket.once('connect', () => (socket.end(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('close', () => resolve(false));
  });

/** Stops the cluster if a test run started it (the Vitest global teardown calls this). */
export async function stopLocalClusterIfTestsStartedIt(): Promise<boolean> {
  if (!existsSync(STARTED_BY_TESTS)) return false;
  if (!ownsClusterMarker(Number(readFileSync(STARTED_BY_TESTS, 'utf8').trim()), process.pid)) return false;
  await script('stop');
  rmSync(STARTED_BY_TESTS, { force: true });
  return true;
}

export async function startLocalCluster(): Promise<LocalCluster> {
  const wasRunning = (await Promise.all(CLUSTER_NODES.map((n) => answers(amqpPort(n))))).every(Boolean);
  await script('start');
  if (!wasRunning) writeFileSync(STARTED_BY_TESTS, `${process.env[TEST_RUN_PID] ?? process.pid}\n`);
  return {
    amqpUrls,
    apiUrls: CLUSTER_API,
    nodeUrl: (n, vhost) => `amqp://guest:guest@127.0.0.1:${amqpPort(n)}/${encodeURIComponent(vhost)}`,
    async createVhost(prefix) {
      const name = `herald-${prefix}-${Math.floor(Date.now() / 1000).toString(36)}-${randomBytes(4).toString('hex')}`;
      const enc = encodeURIComponent(name);
      await api('PUT', `/vhosts/${enc}`, {});
      await api('PUT', `/permissions/${enc}/guest`, { configure: '.*', write: '.*', read: '.*' });
      return { name, amqpUrl: amqpUrls(name), delete: async () => void (await api('DELETE', `/vhosts/${enc}`).catch(() => undefined)) };
    },
    async leaderOf(vhost, queue) {
      const q = await api<{ leader?: string; node?: string }>('GET', `/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(queue)}`);
      const n = nodeNumber(q?.leader ?? q?.node);
      if (n === undefined) throw new Error(`queue ${queue} has no leader now`);
      return n;
    },
    async nodeOfConnection(connectionName) {
      const list = (await api<Array<{ node: string; client_properties?: { connection_name?: string } }>>('GET', '/connections?columns=node,client_properties')) ?? [];
      return nodeNumber(list.find((c) => c.client_properties?.connection_name === connectionName)?.node);
    },
    start: async () => ({ report: (await script('start')).stderr }),
    kill: async (n) => void (await script('kill', String(n))),
    stopNode: async (n) => void (await script('stop-node', String(n))),
    startNode: async (n) => void (await script('start-node', String(n))),
    memoryAlarm: async (on) => void (await script('ctl', '1', 'set_vm_memory_high_watermark', ...(on ? ['absolute', '1MB'] : ['0.4']))),
    async runningNodes() {
      const nodes = (await api<Array<{ name: string; running: boolean }>>('GET', '/nodes?columns=name,running')) ?? [];
      return nodes.filter((x) => x.running).map((x) => nodeNumber(x.name)).filter((x): x is ClusterNode => x !== undefined);
    },
  };
}
