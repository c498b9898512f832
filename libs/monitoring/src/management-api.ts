import { isHeraldQueue, toSnapshot, type ManagementQueue, type QueueSnapshot } from './queue-snapshot.ts';

/** The RabbitMQ management API could not be read (down, refused, or answered an error). */
export class ManagementApiError extends Error {
  override readonly name = 'ManagementApiError';
}

export interface ManagementApi {
  /** Every Herald queue of `vhost` (push.*, herald.*), sorted by name. */
  queues(vhost: string): Promise<QueueSnapshot[]>;
  /** The cluster's nodes and their resource alarms (GET /api/nodes: needs the `monitoring` tag). */
  nodes?(): Promise<NodeResources[]>;
}

/** A RabbitMQ node's memory and disk, as the management API reports them (bytes). */
export interface NodeResources {
  name: string;
  memAlarm: boolean;
  diskFreeAlarm: boolean;
  memUsed?: number;
  memLimit?: number;
  diskFree?: number;
  diskFreeLimit?: number;
}

interface ManagementNode {
  name: string;
  mem_alarm?: boolean;
  disk_free_alarm?: boolean;
  mem_used?: number;
  mem_limit?: number;
  disk_free?: number;
  disk_free_limit?: number;
}

const isBytes = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function toNode(n: ManagementNode): NodeResources {
  const node: NodeResources = { name: n.name, memAlarm: n.mem_alarm === true, diskFreeAlarm: n.disk_free_alarm === true };
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

/**
 * `apiUrl` carries the credentials: http://user:pass@host:15672/api. In a cluster it may be a
 * comma-separated list of the nodes' APIs: a node that does not answer hands the call to the
 * next, and the one that answered is asked first next time.
 */
export function createManagementApi(apiUrl: string, timeoutMs = 5_000): Required<ManagementApi> {
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
      const raw = (await get('/nodes?columns=name,mem_alarm,disk_free_alarm,mem_used,mem_limit,disk_free,disk_free_limit')) as ManagementNode[];
      return raw.map(toNode).sort((a, b) => a.name.localeCompare(b.name));
    },
  };
}
