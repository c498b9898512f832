/** Helpers for this lib's integration specs only (not exported from index.ts). */
import { connect, type GetMessage } from 'amqplib';
import { createLogger } from '@herald/logging';
import { createTestVhost, managementRequest as mgmt, waitFor, type TestVhost } from '@herald/testing';
import { connectBroker } from './broker.ts';
import type { Broker, InboundMessage, Outcome, QueueCounts } from './types.ts';

export const silentLogger = createLogger({ service: 'messaging-test', level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

export interface TestBroker {
  vhost: TestVhost;
  broker: Broker;
  connectionName: string;
  teardown(): Promise<void>;
}

export async function startTestBroker(prefix: string): Promise<TestBroker> {
  const vhost = await createTestVhost(prefix);
  const connectionName = `${vhost.name}-conn`;
  const broker = await connectBroker({ url: vhost.amqpUrl, logger: silentLogger, connectionName });
  return {
    vhost,
    broker,
    connectionName,
    teardown: async () => {
      await broker.close().catch(() => undefined);
      await vhost.delete();
    },
  };
}

/**
 * Waits (at most 2 s) until `queue` holds `want.ready` messages and has `want.consumers` consumers.
 * The broker settles a closed channel's or connection's consumers and unacked deliveries after it
 * has answered the close (a quorum queue hears of it from its own process), so a count taken at
 * once may miss them.
 */
export function waitForCounts(broker: Broker, queue: string, want: QueueCounts, what: string): Promise<true> {
  return waitFor(
    what,
    async () => {
      const counts = (await broker.queueCounts([queue])).get(queue);
      return counts?.ready === want.ready && counts.consumers === want.consumers;
    },
    { timeoutMs: 2_000 },
  );
}

/**
 * How long a spec waits for a closed channel's unacknowledged messages to come back: the broker
 * settles them after it has answered the close (a quorum queue hears of it from its own process),
 * so a queue read at once may miss them, and "none came back" holds only after this wait.
 */
export const RETURN_WAIT_MS = 2_000;

/**
 * The bodies of every message `queue` hands a consumer of its own (auto-ack, on a separate
 * connection) within `ms`: what is left in it, and what comes back to it meanwhile.
 */
export async function takeAllWithin(url: string, queue: string, ms = RETURN_WAIT_MS): Promise<string[]> {
  const conn = await connect(url);
  try {
    const ch = await conn.createChannel();
    const bodies: string[] = [];
    await ch.consume(queue, (msg) => void (msg !== null && bodies.push(msg.content.toString())), { noAck: true });
    await new Promise((r) => setTimeout(r, ms));
    return bodies;
  } finally {
    await conn.close();
  }
}

/** basic.get with auto-ack on a separate connection: takes one message off `queue`, or false. */
export async function takeMessage(url: string, queue: string): Promise<GetMessage | false> {
  const conn = await connect(url);
  try {
    const ch = await conn.createChannel();
    return await ch.get(queue, { noAck: true });
  } finally {
    await conn.close();
  }
}

/** Waits until a message can be taken from `queue`. */
export function waitForMessage(url: string, queue: string, timeoutMs = 15_000): Promise<GetMessage> {
  return waitFor(`a message on ${queue}`, async () => (await takeMessage(url, queue)) || undefined, { timeoutMs, intervalMs: 100 });
}

async function connections(vhost: string): Promise<{ name: string; client_properties?: { connection_name?: string } }[]> {
  const res = await mgmt('GET', `/vhosts/${encodeURIComponent(vhost)}/connections`);
  return res.json<{ name: string; client_properties?: { connection_name?: string } }[]>();
}

/** The client-given names (connection_name) of the connections open on `vhost`. */
export async function connectionNames(vhost: string): Promise<string[]> {
  return (await connections(vhost)).map((c) => c.client_properties?.connection_name ?? '');
}

async function connectionsNamed(vhost: string, connectionName: string): Promise<string[]> {
  return (await connections(vhost)).filter((c) => c.client_properties?.connection_name === connectionName).map((c) => c.name);
}

/** Force-closes the client connection named `connectionName` through the management API; returns its server-side name. */
export async function forceCloseConnection(vhost: string, connectionName: string): Promise<string> {
  const name = await waitFor(`connection ${connectionName} in the management API`, async () => (await connectionsNamed(vhost, connectionName))[0]);
  const res = await mgmt('DELETE', `/connections/${encodeURIComponent(name)}`);
  if (!res.ok) throw new Error(`closing connection ${name}: ${res.status}`);
  return name;
}

/** Waits until a connection called `connectionName` other than `oldName` is open (the client reconnected). */
export function waitForReconnect(vhost: string, connectionName: string, oldName: string): Promise<string> {
  return waitFor(
    `${connectionName} to reconnect`,
    async () => (await connectionsNamed(vhost, connectionName)).find((n) => n !== oldName),
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

/** A handler that records what it saw and answers with `decide`. */
export function recordingHandler(decide: (m: InboundMessage) => Outcome | Promise<Outcome> = () => ({ kind: 'ack' })) {
  const seen: InboundMessage[] = [];
  const calls: number[] = [];
  return {
    seen,
    calls,
    handle: async (messages: readonly InboundMessage[]): Promise<Outcome[]> => {
      calls.push(messages.length);
      seen.push(...messages);
      return Promise.all(messages.map(decide));
    },
  };
}
