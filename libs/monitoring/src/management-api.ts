import { isHeraldQueue, toSnapshot, type ManagementQueue, type QueueSnapshot } from './queue-snapshot.ts';

/** The RabbitMQ management API could not be read (down, refused, or answered an error). */
export class ManagementApiError extends Error {
  override readonly name = 'ManagementApiError';
}

export interface ManagementApi {
  /** Every Herald queue of `vhost` (push.*, herald.*), sorted by name. */
  queues(vhost: string): Promise<QueueSnapshot[]>;
  /** The cluster's nodes, whether they run, and their resource alarms (GET /api/nodes: needs the `monitoring` tag). */
  nodes?(): Promise<NodeResources[]>;
}

/** A RabbitMQ node as the management API reports it: running or not, its partitions, its memory and disk (bytes). */
export interface NodeResources {
  name: string;
  /** A member of the cluster that is not running (stopped, or cut off from the node that answered) reports nothing else. */
  running: boolean;
  /** The nodes it is partitioned from (none: no partition). */
  partitions: string[];
  memAlarm: boolean;
  diskFreeAlarm: boolean;
  memUsed?: number;
  memLimit?: number;
  diskFree?: number;
  diskFreeLimit?: number;
}

/** The management API's JSON for one node (the fields Herald reads). */
export interface ManagementNode {
  name: string;
  running?: boolean;
  partitions?: string[];
  mem_alarm?: boolean;
  disk_free_alarm?: boolean;
  mem_used?: number;
  mem_limit?: number;
  disk_free?: number;
  disk_free_limit?: number;
}

const isBytes = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** GET /api/nodes's answer, by name. A node whose answer lacks `running` is taken to run: no alarm on what was not said. */
export function toNodes(raw: readonly ManagementNode[]): NodeResources[] {
  return raw.map(toNode).sort((a, b) => a.name.localeCompare(b.name));
}

function toNode(n: ManagementNode): NodeResources {
  const node: NodeResources = { name: n.name, running: n.running !== false, partitions: n.partitions ?? [], memAlarm: n.mem_alarm === true, diskFreeAlarm: n.disk_free_alarm === true };
  if (isBytes(n.mem_used)) node.memUsed = n.mem_used;
  if (isBytes(n.mem_limit)) node.memLimit = n.mem_limit;
  if (isBytes(n.disk_free)) node.diskFree = n.disk_free;
  if (isBytes(n.disk_free_limit)) node.diskFreeLimit = n.disk_free_limit;
  return node;
}

/** The vhost of an AMQP setting (one URL, or a comma-separated list of a cluster's nodes: the first one's). */
export const vhostOf = (amqpUrl: string): string => decodeURIComponent(new URL(amqpUrl.split(',')[0]?.trim() ?? '').pathname.slice(1)) || '/';

/**
 * An http(s) URL's user and password as a Basic authorization header, and the URL without them:
 * fetch refuses a URL that carries credentials, and its error message quotes the URL whole.
 */
export function credentialsApart(withCredentials: string): { url: string; authorization?: string } {
  const url = new URL(withCredentials);
  if (url.username === '' && url.password === '') return { url: url.toString() };
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  url.username = '';
  url.password = '';
  return { url: url.toString(), authorization };
}

interface Endpoint {
  base: string;
  auth: string;
}

function endpointOf(apiUrl: string): Endpoint {
  const { url, authorization } = credentialsApart(apiUrl);
  return { base: url.replace(/\/$/, ''), auth: authorization ?? `Basic ${Buffer.from(':').toString('base64')}` };
}

/** Where a failover between the API's URLs is said (a pino Logger fits). */
export interface ManagementApiLog {
  warn(fields: object, message: string): void;
}

/**
 * `apiUrl` carries the credentials: http://user:pass@host:15672/api. In a cluster it may be a
 * comma-separated list of the nodes' APIs: a node that does not answer hands the call to the
 * next, and the one that answered is asked first next time. That change is logged at warn, once
 * (not at every poll while it lasts): the node that stopped answering may be the one down.
 */
export function createManagementApi(apiUrl: string, options: { timeoutMs?: number; log?: ManagementApiLog } = {}): Required<ManagementApi> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const endpoints = apiUrl.split(',').map((u) => u.trim()).filter((u) => u.length > 0).map(endpointOf);
  let preferred = 0;
  const getFrom = async ({ base, auth }: Endpoint, path: string): Promise<unknown> => {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, { headers: { authorization: auth }, signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      throw new ManagementApiError(`RabbitMQ management API unreachable at ${base}: ${(err as Error).message}`);
    }
    if (!res.ok) throw new ManagementApiError(`RabbitMQ management API answered ${res.status} for ${path}`);
    return res.json();
  };
  const get = async (path: string): Promise<unknown> => {
    const errors: string[] = [];
    for (let i = 0; i < endpoints.length; i++) {
      const at = (preferred + i) % endpoints.length;
      try {
        const body = await getFrom(endpoints[at] as Endpoint, path);
        // Once: a call running beside this one that failed over too finds it preferred already.
        if (at !== preferred) {
          options.log?.warn({ failed: errors, answeredBy: endpoints[at]?.base }, `RabbitMQ management API failed over from ${endpoints[preferred]?.base} to ${endpoints[at]?.base}, asked first from now on`);
        }
        preferred = at;
        return body;
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    throw new ManagementApiError(errors.join('; '));
  };
  return {
    async queues(vhost) {
      const columns = 'name,messages,messages_ready,messages_unacknowledged,consumers,head_message_timestamp,message_stats';
      const raw = (await get(`/queues/${encodeURIComponent(vhost)}?columns=${columns}`)) as ManagementQueue[];
      const now = Date.now();
      return raw.filter((q) => isHeraldQueue(q.name)).map((q) => toSnapshot(q, now)).sort((a, b) => a.name.localeCompare(b.name));
    },
    async nodes() {
      return toNodes((await get('/nodes?columns=name,running,partitions,mem_alarm,disk_free_alarm,mem_used,mem_limit,disk_free,disk_free_limit')) as ManagementNode[]);
    },
  };
}
