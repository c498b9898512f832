import { createConnection, createServer, type AddressInfo, type Server } from 'node:net';
import { Queues, WorkQueues, parkedQueueFor } from '@herald/contracts';
import { createLogger, type Logger } from '@herald/logging';
import { createTestVhost, queueInfo, startTcpProxyFor, type TestVhost } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { applyTopologyWhenReachable, refusedByBroker } from './apply-topology.ts';
import { heraldTopology, workQueueSpec } from './topology.ts';

/** A silent logger, and what was passed to its own warn (its children's, the connection's, are not kept). */
function recordingLogger(): { logger: Logger; lines: () => Array<{ msg: string; attempt?: number; err?: Error }> } {
  const logger = createLogger({ service: 'spec', level: 'silent', format: 'json' });
  const warned = vi.spyOn(logger, 'warn');
  return {
    logger,
    lines: () => warned.mock.calls.map(([fields, msg]) => ({ ...(fields as { attempt?: number; err?: Error }), msg: String(msg) })),
  };
}

/**
 * A proxy to the test's RabbitMQ that cuts its first connection once the client has sent `cutAfter`
 * bytes (the handshake is about 400: the cut falls among the declarations), as a node that stops
 * mid-way does; later connections pass.
 */
async function cuttingProxy(amqpUrl: string, cutAfter: number): Promise<{ server: Server; port: number; connections: () => number }> {
  const target = new URL(amqpUrl);
  let connections = 0;
  const server = createServer((client) => {
    connections++;
    const broker = createConnection({ host: target.hostname, port: Number(target.port || 5672) });
    let sent = 0;
    const cut = connections === 1;
    client.on('data', (chunk: Buffer) => {
      sent += chunk.length;
      if (cut && sent > cutAfter) {
        client.destroy();
        broker.destroy();
        return;
      }
      broker.write(chunk);
    });
    broker.pipe(client);
    client.on('error', () => broker.destroy()).on('close', () => broker.destroy());
    broker.on('error', () => client.destroy()).on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, connections: () => connections };
}

describe('applyTopologyWhenReachable', () => {
  let vhost: TestVhost;
  beforeAll(async () => {
    vhost = await createTestVhost('msg-apply-topology');
  });
  afterAll(() => vhost.delete());

  it('declares the whole topology when the broker drops the connection mid-way, on a second connection', async () => {
    const proxy = await cuttingProxy(vhost.amqpUrl, 1500);
    const { logger, lines } = recordingLogger();
    try {
      const url = new URL(vhost.amqpUrl);
      url.port = String(proxy.port);
      await applyTopologyWhenReachable({ url: url.toString(), logger, topology: heraldTopology({ retryDelaysMs: [1000] }), deadlineMs: 20_000 });
    } finally {
      proxy.server.close();
    }
    // A second connection at least (amqplib's own recovery may open another before the first attempt ends).
    expect(proxy.connections()).toBeGreaterThanOrEqual(2);
    const retried = lines().filter((l) => l.msg === 'declaring the queue topology failed; trying again');
    expect(retried.map((l) => l.attempt)).toEqual([1]);
    // The first connection was cut among the declarations (as in a CI run of the cluster chaos suite's setup), not at its handshake.
    expect(retried[0]?.err?.message).toMatch(/^declaring queue "[^"]+" failed: Channel ended/);
    for (const q of [...WorkQueues, ...WorkQueues.map(parkedQueueFor)]) expect(await queueInfo(vhost.name, q), q).toBeDefined();
  });

  it('fails at once, without trying again, when the broker refuses a declaration', async () => {
    const { logger, lines } = recordingLogger();
    const clash = { exchanges: [], queues: [{ ...workQueueSpec(Queues.jobs, 'push.jobs', 7), bindings: [] }] };
    await applyTopologyWhenReachable({ url: vhost.amqpUrl, logger, topology: heraldTopology({ retryDelaysMs: [1000] }) });
    const err = await applyTopologyWhenReachable({ url: vhost.amqpUrl, logger, topology: clash, deadlineMs: 60_000 }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/declaring queue "push\.jobs" failed: .*406 \(PRECONDITION-FAILED\)/);
    expect(refusedByBroker(err)).toBe(true);
    expect(lines()).toEqual([]);
  });

  it('fails at once for a vhost the broker does not have', async () => {
    const { logger, lines } = recordingLogger();
    const url = new URL(vhost.amqpUrl);
    url.pathname = `/${vhost.name}-missing`;
    const err = await applyTopologyWhenReachable({ url: url.toString(), logger, topology: heraldTopology({ retryDelaysMs: [1000] }), deadlineMs: 60_000 }).catch((e: unknown) => e);
    expect((err as Error).message).toContain(`530 (NOT-ALLOWED) with message "NOT_ALLOWED - vhost ${vhost.name}-missing not found"`);
    expect(refusedByBroker(err)).toBe(true);
    expect(lines()).toEqual([]);
  });

  it('tries again while nothing answers, and gives up at its deadline with the reason', async () => {
    const { logger, lines } = recordingLogger();
    const idle = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => idle.listen(0, '127.0.0.1', resolve));
    const port = (idle.address() as AddressInfo).port;
    try {
      const err = await applyTopologyWhenReachable({ url: `amqp://guest:guest@127.0.0.1:${port}/x`, logger, topology: heraldTopology({ retryDelaysMs: [1000] }), deadlineMs: 6_000 }).catch(
        (e: unknown) => e,
      );
      expect((err as Error).message).toMatch(/cannot connect to RabbitMQ/);
      expect(refusedByBroker(err)).toBe(false);
      // Tries after 1 s and 2 s; a third wait of 4 s (from about 3 s in) would pass the deadline.
      expect(lines().map((l) => l.attempt)).toEqual([1, 2]);
    } finally {
      idle.close();
    }
  });

  it('gives up an attempt the broker never answers at the deadline, closing its connection', async () => {
    const { logger } = recordingLogger();
    const proxy = await startTcpProxyFor(vhost.amqpUrl);
    proxy.freeze();
    try {
      const started = Date.now();
      const err = await applyTopologyWhenReachable({ url: proxy.urlFor(vhost.amqpUrl), logger, topology: heraldTopology({ retryDelaysMs: [1000] }), deadlineMs: 2_000 }).catch((e: unknown) => e);
      expect((err as Error).message).toBe('declaring the queue topology did not finish within 2000 ms');
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      proxy.thaw();
      await proxy.close();
    }
  });

  it('tries again when the broker closes the connection for what passes: a vhost that is down, a connection limit, a node shutting down', () => {
    const closed = (reply: string): Error => new Error('cannot connect to RabbitMQ at amqp://x', { cause: new Error(`Connection closed by server while expecting ConnectionOpenOk: ${reply}`) });
    expect(refusedByBroker(closed('530 (NOT-ALLOWED) with message "NOT_ALLOWED - vhost v is down"'))).toBe(false);
    expect(refusedByBroker(closed('530 (NOT-ALLOWED) with message "NOT_ALLOWED - connection limit (10) is reached"'))).toBe(false);
    expect(refusedByBroker(closed('320 (CONNECTION-FORCED) with message "CONNECTION_FORCED - broker forced connection closure with reason \'shutdown\'"'))).toBe(false);
    expect(refusedByBroker(closed(`530 (NOT-ALLOWED) with message "NOT_ALLOWED - access to vhost 'v' refused for user 'u'"`))).toBe(true);
  });
});
