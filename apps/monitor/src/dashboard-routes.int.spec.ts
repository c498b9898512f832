import { createLogger } from '@herald/logging';
import { connectBroker, HeraldHeaders, workQueueTopology, type Broker } from '@herald/messaging';
import { Registry, startOpsServer } from '@herald/runtime';
import { createTestVhost, type TestVhost } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardRoutes, type DashboardDeps } from './dashboard-routes.ts';
import { createOperatorGate } from './operator-gate.ts';
import type { QueueMonitor } from './queue-monitor.ts';

const logger = createLogger({ service: 'dashboard-routes-spec', level: 'silent' });
const WORK = 'dash.send';
const PARKED = `${WORK}.parked`;

describe("the dashboard's parked list, from a real RabbitMQ", () => {
  let vhost: TestVhost;
  let broker: Broker;
  beforeAll(async () => {
    vhost = await createTestVhost('dashparked');
    broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'dashboard-routes-spec' });
    await broker.applyTopology(workQueueTopology(WORK, 'dash.exchange'));
  });
  afterAll(async () => {
    await broker?.close();
    await vhost?.delete();
  });

  // A push parked on Saturday showed "10:42:13" on Monday, and was replayed as this morning's.
  it('gives each parked push when it was due beside when it was parked', async () => {
    const push = { pushId: 'p1', app: 'demo', acceptedAt: '2026-12-04T08:00:00.000Z', dueAt: '2026-12-05T09:00:00.000Z' };
    await broker.publisher.publish({
      exchange: '',
      routingKey: PARKED,
      body: Buffer.from(JSON.stringify(push)),
      messageId: 'p1',
      headers: {
        [HeraldHeaders.parkedCode]: 'retries-exhausted',
        [HeraldHeaders.parkedReason]: 'the provider kept failing',
        [HeraldHeaders.parkedAt]: '2026-12-05T10:42:13.000Z',
        [HeraldHeaders.originalQueue]: WORK,
        [HeraldHeaders.attempt]: 5,
      },
    });
    const monitor = {
      state: () => ({ vhost: vhost.name, at: null, pollMs: 1000, error: null, queues: [{ name: PARKED }], alarms: [] }),
    } as unknown as QueueMonitor;
    const routes = dashboardRoutes({
      gate: createOperatorGate(
        { findOperatorByKey: async (key) => (key === 'hko_good' ? { id: 'op1', name: 'ann' } : undefined) },
        5_000,
        logger,
      ),
      monitor,
      amqpUrl: vhost.amqpUrl,
      logger,
    } as unknown as DashboardDeps);
    const server = await startOpsServer({
      port: 0,
      registry: new Registry(),
      healthy: () => true,
      ready: () => ({ ready: true, problems: [] }),
      routes: () => routes,
    });
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/api/parked/${PARKED}`, {
        headers: { authorization: 'Bearer hko_good' },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        queue: PARKED,
        messages: [
          {
            id: 'p1',
            app: 'demo',
            code: 'retries-exhausted',
            reason: 'the provider kept failing',
            parkedAt: '2026-12-05T10:42:13.000Z',
            dueSince: '2026-12-05T09:00:00.000Z',
            originalQueue: WORK,
            attempt: 5,
          },
        ],
      });
    } finally {
      await server.close();
    }
  });

  // The parked queues' leases live in PostgreSQL: its outage, the incident the dashboard must show, took the parked list with it.
  it('lists parked messages without the lease while PostgreSQL does not answer, and answers a replay 503 saying why', async () => {
    const monitor = {
      state: () => ({ vhost: vhost.name, at: null, pollMs: 1000, error: null, queues: [{ name: PARKED }], alarms: [] }),
    } as unknown as QueueMonitor;
    const routes = dashboardRoutes({
      gate: createOperatorGate({ findOperatorByKey: async (key) => (key === 'hko_good' ? { id: 'op1', name: 'ann' } : undefined) }, 5_000, logger),
      monitor,
      amqpUrl: vhost.amqpUrl,
      logger,
      parkedLease: async () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })),
    } as unknown as DashboardDeps);
    const server = await startOpsServer({ port: 0, registry: new Registry(), healthy: () => true, ready: () => ({ ready: true, problems: [] }), routes: () => routes });
    try {
      const listed = await fetch(`http://127.0.0.1:${server.port}/api/parked/${PARKED}`, { headers: { authorization: 'Bearer hko_good' } });
      expect(listed.status).toBe(200);
      expect(((await listed.json()) as { messages: Array<{ id: string }> }).messages.map((m) => m.id)).toEqual(['p1']);
      const replay = await fetch(`http://127.0.0.1:${server.port}/api/parked/${PARKED}/replay`, {
        method: 'POST',
        headers: { authorization: 'Bearer hko_good', 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'p1' }),
      });
      expect(replay.status).toBe(503);
      expect(((await replay.json()) as { error: string }).error).toMatch(/^PostgreSQL does not answer/);
    } finally {
      await server.close();
    }
  });
});
