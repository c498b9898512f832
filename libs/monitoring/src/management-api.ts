import { isHeraldQueue, toSnapshot, type ManagementQueue, type QueueSnapshot } from './queue-snapshot.ts';

/** The RabbitMQ management API could not be read (down, refused, or answered an error). */
export class ManagementApiError extends Error {
  override readonly name = 'ManagementApiError';
}

export interface ManagementApi {
  /** Every Herald queue of `vhost` (push.*, herald.*), sorted by name. */
  queues(vhost: string): Promise<QueueSnapshot[]>;
}

/** The vhost an AMQP URL points at ('/' when the path is empty). */
export const vhostOf = (amqpUrl: string): string => decodeURIComponent(new URL(amqpUrl).pathname.slice(1)) || '/';

/** `apiUrl` carries the credentials: http://user:pass@host:15672/api. */
export function createManagementApi(apiUrl: string, timeoutMs = 5_000): ManagementApi {
  const url = new URL(apiUrl);
  const auth = Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64');
  url.username = '';
  url.password = '';
  const base = url.toString().replace(/\/$/, '');
  const get = async (path: string): Promise<unknown> => {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, { headers: { authorization: `Basic ${auth}` }, signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      throw new ManagementApiError(`RabbitMQ management API unreachable at ${base}: ${(err as Error).message}`);
    }
    if (!res.ok) throw new ManagementApiError(`RabbitMQ management API answered ${res.status} for ${path}`);
    return res.json();
  };
  return {
    async queues(vhost) {
      const columns = 'name,messages,messages_ready,messages_unacknowledged,consumers,head_message_timestamp,message_stats';
      const raw = (await get(`/queues/${encodeURIComponent(vhost)}?columns=${columns}`)) as ManagementQueue[];
      const now = Date.now();
      return raw.filter((q) => isHeraldQueue(q.name)).map((q) => toSnapshot(q, now)).sort((a, b) => a.name.localeCompare(b.name));
    },
  };
}
