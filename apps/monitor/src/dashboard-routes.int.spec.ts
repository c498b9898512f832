import { randomUUID } from 'node:crypto';
import { derivePushId } from '@herald/contracts';
import { createDatabase, startReplayedOutcomes, toJobStatus, type ReplayedOutcomes } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, HeraldHeaders, workQueueTopology, type Broker } from '@herald/messaging';
import { Registry, startOpsServer } from '@herald/runtime';
import { createTestDatabase, createTestVhost, type TestDatabase, type TestVhost } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardRoutes, type DashboardDeps } from './dashboard-routes.ts';
import { createOperatorGate } from './operator-gate.ts';
import type { QueueMonitor } from './queue-monitor.ts';

/** An operator key in the format Herald mints (OPERATOR_KEY_FORMAT), named for the test. */
const opKey = (name: string): string => `hko_${'0'.repeat(12)}_${name.padEnd(43, '0')}`;

const logger = createLogger({ service: 'dashboard-routes-spec', level: 'silent' });
const WORK = 'dash.send';
const PARKED = `${WORK}.parked`;

/** A parked device push's work queue, for the replay's tests. */
const WORK2 = 'dash.apns';
const PARKED2 = `${WORK2}.parked`;

let vhost: TestVhost;
let broker: Broker;
beforeAll(async () => {
  vhost = await createTestVhost('dashparked');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'dashboard-routes-spec' });
  await broker.applyTopology(workQueueTopology(WORK, 'dash.exchange'));
  await broker.applyTopology(workQueueTopology(WORK2, 'dash.apns.exchange'));
});
afterAll(async () => {
  await broker?.close();
  await vhost?.delete();
});

describe("the dashboard's parked list, from a real RabbitMQ", () => {

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
        { findOperatorByKey: async (key) => (key === opKey('good') ? { id: 'op1', name: 'ann' } : undefined) },
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
        headers: { authorization: `Bearer ${opKey('good')}` },
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
      gate: createOperatorGate({ findOperatorByKey: async (key) => (key === opKey('good') ? { id: 'op1', name: 'ann' } : undefined) }, 5_000, logger),
      monitor,
      amqpUrl: vhost.amqpUrl,
      logger,
      parkedLease: async () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })),
    } as unknown as DashboardDeps);
    const server = await startOpsServer({ port: 0, registry: new Registry(), healthy: () => true, ready: () => ({ ready: true, problems: [] }), routes: () => routes });
    try {
      const listed = await fetch(`http://127.0.0.1:${server.port}/api/parked/${PARKED}`, { headers: { authorization: `Bearer ${opKey('good')}` } });
      expect(listed.status).toBe(200);
      expect(((await listed.json()) as { messages: Array<{ id: string }> }).messages.map((m) => m.id)).toEqual(['p1']);
      const replay = await fetch(`http://127.0.0.1:${server.port}/api/parked/${PARKED}/replay`, {
        method: 'POST',
        headers: { authorization: `Bearer ${opKey('good')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'p1' }),
      });
      expect(replay.status).toBe(503);
      expect(((await replay.json()) as { error: string }).error).toMatch(/^PostgreSQL does not answer/);
    } finally {
      await server.close();
    }
  });
});

describe("the dashboard's replay of a parked device push, on a real RabbitMQ and PostgreSQL", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('dash_replay');
    await t.db.apps.upsert({ id: 'demo' });
  });
  afterAll(() => t?.drop());

  const statusOf = async (job: string) => {
    const record = await t.db.jobs.status(job);
    if (record === undefined) throw new Error(`no job ${job}`);
    const { state, inFlight, parked } = toJobStatus(record);
    return { state, inFlight, parked };
  };

  /** A job of a delivered push and one parked (retries-exhausted) in PARKED2; the parked push's id. */
  async function deliveredAndParked(job: string): Promise<string> {
    const [sent, held] = [derivePushId(job, '1'), derivePushId(job, '2')];
    await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 2, outcome: 'fanned-out' }]);
    await t.db.jobs.recordOutcomes([
      { pushId: sent, jobId: job, outcome: 'delivered' },
      { pushId: held, jobId: job, outcome: 'parked', code: 'retries-exhausted' },
    ]);
    const body = { version: 1, pushId: held, jobId: job, deviceId: '2', app: 'demo', platform: 'apns', token: 'ab'.repeat(32), userId: 'u', content: { title: 'hi' }, acceptedAt: new Date().toISOString() };
    await broker.publisher.publish({
      exchange: '',
      routingKey: PARKED2,
      body: Buffer.from(JSON.stringify(body)),
      messageId: held,
      headers: { [HeraldHeaders.parkedCode]: 'retries-exhausted', [HeraldHeaders.originalQueue]: WORK2, [HeraldHeaders.attempt]: 5 },
    });
    return held;
  }

  async function replayThroughDashboard(id: string, replayedOutcomes: () => Promise<ReplayedOutcomes>): Promise<{ status: number; body: unknown }> {
    const monitor = { state: () => ({ vhost: vhost.name, at: null, pollMs: 1000, error: null, queues: [{ name: PARKED2 }], alarms: [] }) } as unknown as QueueMonitor;
    const routes = dashboardRoutes({
      gate: createOperatorGate({ findOperatorByKey: async (key) => (key === opKey('good') ? { id: 'op1', name: 'ann' } : undefined) }, 5_000, logger),
      monitor,
      audit: t.db.audit,
      amqpUrl: vhost.amqpUrl,
      replayedOutcomes,
      logger,
    } as unknown as DashboardDeps);
    const server = await startOpsServer({ port: 0, registry: new Registry(), healthy: () => true, ready: () => ({ ready: true, problems: [] }), routes: () => routes });
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/api/parked/${PARKED2}/replay`, {
        method: 'POST',
        headers: { authorization: `Bearer ${opKey('good')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id }),
      });
      return { status: res.status, body: await res.json() };
    } finally {
      await server.close();
    }
  }

  it('counts the replayed push in flight again: the done job reads sending until its new outcome', async () => {
    const job = randomUUID();
    const held = await deliveredAndParked(job);
    expect(await statusOf(job)).toEqual({ state: 'done', inFlight: 0, parked: 1 });
    const replay = await replayThroughDashboard(held, () => startReplayedOutcomes(t.db.kysely));
    expect(replay).toEqual({ status: 200, body: { seen: 1, replayed: 1, refused: [] } });
    expect(await statusOf(job)).toEqual({ state: 'sending', inFlight: 1, parked: 0 });
    await t.db.jobs.recordOutcomes([{ pushId: held, jobId: job, outcome: 'delivered' }]);
    expect(await statusOf(job)).toEqual({ state: 'done', inFlight: 0, parked: 0 });
  });

  it('replays all the same when PostgreSQL does not clear the outcome, and says so in its answer', async () => {
    const job = randomUUID();
    const held = await deliveredAndParked(job);
    const away = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', schema: t.schema });
    try {
      const replay = await replayThroughDashboard(held, () => startReplayedOutcomes(away.kysely));
      expect(replay).toEqual({
        status: 200,
        body: { seen: 1, replayed: 1, refused: [], warning: expect.stringMatching(/^the parked outcomes of 1 replayed push\(es\) could not be cleared \(PostgreSQL: .*\): their jobs count them parked/) as unknown },
      });
    } finally {
      await away.close();
    }
    expect(await statusOf(job)).toEqual({ state: 'done', inFlight: 0, parked: 1 });
  });
});
