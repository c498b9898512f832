import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = join(import.meta.dirname, '../../../infra/local/rabbitmq-cluster.sh');
export const CLUSTER_NODES = [1, 2, 3] as const;
export type ClusterNode = (typeof CLUSTER_NODES)[number];

const amqpPort = (n: ClusterNode): number => 5700 + n;
const apiBase = (n: ClusterNode): string => `http://127.0.0.1:${15700 + n}/api`;
const AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

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
  createVhost(prefix: string): Promise<{ name: string; delete(): Promise<void> }>;
  /** The node that leads a quorum queue now. */
  leaderOf(vhost: string, queue: string): Promise<ClusterNode>;
  /** The node a named client connection is on, if it is connected. */
  nodeOfConnection(connectionName: string): Promise<ClusterNode | undefined>;
  kill(n: ClusterNode): Promise<void>;
  stopNode(n: ClusterNode): Promise<void>;
  startNode(n: ClusterNode): Promise<void>;
  /** Nodes whose AMQP port answers a management call. */
  runningNodes(): Promise<ClusterNode[]>;
}

async function script(...args: string[]): Promise<string> {
  const { stdout } = await run('bash', [SCRIPT, ...args], { timeout: 300_000 });
  return stdout;
}

/** GET/PUT/DELETE on the first node's management API that answers. */
async function api(method: string, path: string, body?: unknown): Promise<Response> {
  let last: unknown;
  for (const n of CLUSTER_NODES) {
    try {
      return await fetch(`${apiBase(n)}${path}`, {
        method,
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
    } catch (err) {
      last = err;
    }
  }
  throw new Error(`no node of the local cluster answers its management API: ${String(last)}`);
}

const nodeNumber = (erlangNode: string | undefined): ClusterNode | undefined => {
  const m = /^herald-(\d)@/.exec(erlangNode ?? '');
  return m === null ? undefined : (Number(m[1]) as ClusterNode);
};

export async function startLocalCluster(): Promise<LocalCluster> {
  await script('start');
  return {
    amqpUrls: (vhost) => CLUSTER_NODES.map((n) => `amqp://guest:guest@127.0.0.1:${amqpPort(n)}/${encodeURIComponent(vhost)}`).join(','),
    apiUrls: CLUSTER_NODES.map((n) => `http://guest:guest@127.0.0.1:${15700 + n}/api`).join(','),
    nodeUrl: (n, vhost) => `amqp://guest:guest@127.0.0.1:${amqpPort(n)}/${encodeURIComponent(vhost)}`,
    async createVhost(prefix) {
      const name = `herald-${prefix}-${Math.floor(Date.now() / 1000).toString(36)}-${randomBytes(4).toString('hex')}`;
      const enc = encodeURIComponent(name);
      for (const [path, body] of [[`/vhosts/${enc}`, {}], [`/permissions/${enc}/guest`, { configure: '.*', write: '.*', read: '.*' }]] as const) {
        const res = await api('PUT', path, body);
        if (!res.ok) throw new Error(`creating vhost ${name}: ${res.status} ${await res.text()}`);
      }
      return { name, delete: async () => void (await api('DELETE', `/vhosts/${enc}`).catch(() => undefined)) };
    },
    async leaderOf(vhost, queue) {
      const res = await api('GET', `/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(queue)}`);
      const q = (await res.json()) as { leader?: string; node?: string };
      const n = nodeNumber(q.leader ?? q.node);
      if (n === undefined) throw new Error(`queue ${queue} has no leader now`);
      return n;
    },
    async nodeOfConnection(connectionName) {
      const res = await api('GET', '/connections?columns=node,client_properties');
      const list = (await res.json()) as Array<{ node: string; client_properties?: { connection_name?: string } }>;
      return nodeNumber(list.find((c) => c.client_properties?.connection_name === connectionName)?.node);
    },
    kill: async (n) => void (await script('kill', String(n))),
    stopNode: async (n) => void (await script('stop-node', String(n))),
    startNode: async (n) => void (await script('start-node', String(n))),
    async runningNodes() {
      const res = await api('GET', '/nodes?columns=name,running');
      const nodes = (await res.json()) as Array<{ name: string; running: boolean }>;
      return nodes.filter((x) => x.running).map((x) => nodeNumber(x.name)).filter((x): x is ClusterNode => x !== undefined);
    },
  };
}
