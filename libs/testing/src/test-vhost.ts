import { randomBytes } from 'node:crypto';
import { managementRequest } from './management.ts';

/** The RabbitMQ the tests talk to; override with HERALD_TEST_AMQP_URL (and HERALD_TEST_RABBITMQ_API for its management API). */
const AMQP_BASE = process.env['HERALD_TEST_AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';

export interface TestVhost {
  readonly name: string;
  /** AMQP URL pointing at this vhost. */
  readonly amqpUrl: string;
  delete(): Promise<void>;
}

async function mgmt(method: string, path: string, body?: unknown, api?: string) {
  const res = await managementRequest(method, path, body, api);
  if (!res.ok && res.status !== 404) throw new Error(`RabbitMQ management ${method} ${path}: ${res.status} ${res.body}`);
  return res;
}

/** Test vhosts are named herald-<prefix>-<created, base-36 seconds>-<random>, so stale ones can be found. */
const TEST_VHOST = /^herald-.+-([0-9a-z]{6,})-[0-9a-f]{8}$/;

/** A fresh vhost per test (file), so tests never see each other's messages. */
export async function createTestVhost(prefix = 'test'): Promise<TestVhost> {
  const created = Math.floor(Date.now() / 1000).toString(36);
  const name = `herald-${prefix}-${created}-${randomBytes(4).toString('hex')}`;
  const enc = encodeURIComponent(name);
  await mgmt('PUT', `/vhosts/${enc}`, {});
  const user = decodeURIComponent(new URL(AMQP_BASE).username || 'guest');
  await mgmt('PUT', `/permissions/${enc}/${encodeURIComponent(user)}`, { configure: '.*', write: '.*', read: '.*' });
  return {
    name,
    amqpUrl: `${AMQP_BASE.replace(/\/$/, '')}/${enc}`,
    delete: async () => {
      await mgmt('DELETE', `/vhosts/${enc}`);
    },
  };
}

/** Queue facts from the management API (depth, consumers), for tests that assert on queues; `api`: another broker's (a cluster's). */
export async function queueInfo(vhost: string, queue: string, api?: string): Promise<{ messages: number; consumers: number } | undefined> {
  const res = await mgmt('GET', `/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(queue)}`, undefined, api);
  if (res.status === 404) return undefined;
  const q = res.json<{ messages?: number; consumers?: number }>();
  return { messages: q.messages ?? 0, consumers: q.consumers ?? 0 };
}

export interface PeekedMessage {
  payload: string;
  properties: { headers?: Record<string, unknown>; message_id?: string };
}

/** Look at up to `count` messages of a queue without consuming them (management API, requeued). */
export async function peekMessages(vhost: string, queue: string, count = 100): Promise<PeekedMessage[]> {
  const res = await mgmt('POST', `/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(queue)}/get`, {
    count,
    ackmode: 'ack_requeue_true',
    encoding: 'auto',
    truncate: 1_000_000,
  });
  if (res.status === 404) return [];
  return res.json<PeekedMessage[]>();
}

/**
 * Deletes test vhosts created more than `olderThanMs` ago: runs that were killed never tear down,
 * and hundreds of leftover vhosts slow the management API down for every later run.
 */
export async function sweepStaleTestVhosts(olderThanMs = 2 * 60 * 60 * 1000): Promise<string[]> {
  const res = await mgmt('GET', '/vhosts?columns=name');
  const cutoff = (Date.now() - olderThanMs) / 1000;
  const stale = res
    .json<{ name: string }[]>()
    .map((v) => v.name)
    .filter((name) => {
      const created = TEST_VHOST.exec(name)?.[1];
      return created !== undefined && parseInt(created, 36) < cutoff;
    });
  for (const name of stale) await mgmt('DELETE', `/vhosts/${encodeURIComponent(name)}`);
  return stale;
}
