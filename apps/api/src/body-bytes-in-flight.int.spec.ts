import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Exchanges, Queues } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, type Broker } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, createTestVhost, waitFor, type TestDatabase, type TestVhost } from '@herald/testing';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRecords } from './job-records.ts';
import { buildApiServer } from './server.ts';
import { specServerDeps } from './spec-server-deps.ts';

// The bound on request-body bytes worked on at once (API_MAX_BODY_BYTES_IN_FLIGHT), through the
// real server on a port, with the real PostgreSQL and RabbitMQ behind it. A body counts the bytes
// read of it, so a request is held by sending all of its body but the last 100 bytes.
const BOUND = 100_000;
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;
let records: ReturnType<typeof createJobRecords>;
let api: FastifyInstance;
let registry: Registry;
let port: number;
let key: string;
/** While set, a job's publish waits for it: its request stays unanswered. */
let publishGate: Promise<void> | undefined;

beforeAll(async () => {
  t = await createTestDatabase('api_body_bound');
  vhost = await createTestVhost('api_body_bound');
  const logger = createLogger({ service: 'api-test', level: 'silent' });
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'api-body-bound-test' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
  await t.db.apps.upsert({ id: 'demo' });
  key = (await t.db.apiKeys.create('team-demo', ['demo'])).key;
  records = createJobRecords(t.db.jobs, logger);
  registry = new Registry();
  const deps = specServerDeps(t, logger, {
    jobs: records,
    publish: async (job) => {
      await publishGate;
      return broker.publisher.publish({ exchange: Exchanges.jobs, routingKey: Queues.jobs, body: job, messageId: job.id });
    },
    maxBodyBytesInFlight: BOUND,
    registry,
  });
  api = buildApiServer(deps);
  await api.listen({ port: 0, host: '127.0.0.1' });
  port = (api.server.address() as { port: number }).port;
});
afterAll(async () => {
  await api?.close();
  await records?.flush();
  await broker?.close();
  await vhost?.delete();
  await t?.drop();
});

const metricValue = async (name: string): Promise<number> => (await registry.getSingleMetric(name)?.get())?.values.reduce((sum, v) => sum + v.value, 0) ?? Number.NaN;
const bytesInFlight = (): Promise<number> => metricValue('herald_api_body_bytes_in_flight');
const untilInFlight = (bytes: number): Promise<true> => waitFor(`${bytes} body bytes in flight`, async () => (await bytesInFlight()) === bytes || undefined);

/** A batch of `n` jobs of about 3 KB each (well within APNs' and FCM's 4 KB). */
const batch = (n: number): string =>
  JSON.stringify({ jobs: Array.from({ length: n }, () => ({ id: randomUUID(), app: 'demo', userId: 'u', category: 'news', content: { title: 'hi', data: { blob: 'x'.repeat(3000) } } })) });

const head = (path: string, length: number | 'chunked') =>
  [`POST ${path} HTTP/1.1`, 'host: 127.0.0.1', 'content-type: application/json', `authorization: Bearer ${key}`, length === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${length}`].join('\r\n') + '\r\n\r\n';

interface RawAnswer {
  status: number | undefined;
  headers: string;
  json: unknown;
}

/** A request on a raw connection: `send` writes more of it; `answer` resolves once the server closes it, or it ends a complete answer. */
function rawRequest(first: string): { socket: Socket; send: (text: string) => void; answer: Promise<RawAnswer> } {
  const socket = connect({ host: '127.0.0.1', port });
  let text = '';
  const answer = new Promise<RawAnswer>((resolve) => {
    const done = () => {
      const [headers = '', body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]) || undefined, headers: headers.toLowerCase(), json: body.length > 0 ? (JSON.parse(body) as unknown) : undefined });
    };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      const length = Number(/content-length: (\d+)/i.exec(text)?.[1]);
      const bodyAt = text.indexOf('\r\n\r\n');
      if (bodyAt >= 0 && Buffer.byteLength(text.slice(bodyAt + 4)) >= length) socket.destroy();
    });
    socket.on('close', done);
    // A reset after the answer (the server closed a connection whose body it did not read) keeps the answer.
    socket.on('error', () => undefined);
  });
  socket.write(first);
  return { socket, send: (more) => socket.write(more), answer };
}

/** A request whose body has arrived but for its last 100 bytes: it holds the bytes read until answered. */
async function heldBatch(body: string): Promise<{ read: number; finish: () => Promise<RawAnswer>; abort: () => void }> {
  const length = Buffer.byteLength(body);
  const before = await bytesInFlight();
  const req = rawRequest(head('/v1/jobs:batch', length) + body.slice(0, -100));
  await untilInFlight(before + length - 100);
  return {
    read: length - 100,
    finish: async () => {
      req.send(body.slice(-100));
      return req.answer;
    },
    abort: () => req.socket.destroy(),
  };
}

const post = async (body: string) => {
  const res = await fetch(`http://127.0.0.1:${port}/v1/jobs:batch`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
  return { status: res.status, json: (await res.json()) as unknown };
};

describe('the request-body bytes the API works on at once (API_MAX_BODY_BYTES_IN_FLIGHT)', () => {
  it('refuses a second large batch mid-body, while the first is held, 503 overloaded with Retry-After naming the setting, its connection kept; a small one still fits; once the first is answered the second is accepted', async () => {
    const first = batch(20); // about 62 KB
    const second = batch(20);
    const held = await heldBatch(first);
    const refusedBefore = await metricValue('herald_api_overload_refusals_total');
    const refused = await rawRequest(head('/v1/jobs:batch', Buffer.byteLength(second)) + second).answer;
    expect(refused.status, JSON.stringify(refused.json)).toBe(503);
    expect(refused.headers).toMatch(/\r\nretry-after: 1\r\n/);
    // Closing a connection whose body is still arriving can reset it before the 503 is read.
    expect(refused.headers).not.toMatch(/\r\nconnection: close\r\n/);
    expect(refused.json).toEqual({
      error: {
        code: 'overloaded',
        message: expect.stringMatching(
          new RegExp(`^the API is working on \\d+ bytes of request bodies; reading this one's would take them past API_MAX_BODY_BYTES_IN_FLIGHT \\(${BOUND}\\): nothing of it was taken, retry after 1 s$`),
        ) as unknown,
      },
    });
    expect(await metricValue('herald_api_overload_refusals_total')).toBe(refusedBefore + 1);
    // A bound on bytes, not on requests: a small batch beside the held one is served.
    expect((await post(batch(1))).status).toBe(202);
    expect(await bytesInFlight()).toBe(held.read);
    expect((await held.finish()).status).toBe(202);
    await untilInFlight(0);
    expect((await post(second)).status).toBe(202);
  });

  it('after refusing a body mid-way, reads the rest of it and answers the next request on the same connection', async () => {
    const held = await heldBatch(batch(20));
    const refused = batch(60); // about 186 KB: most of it arrives after the refusal, far more than Node buffers unread
    const next = batch(1);
    const socket = connect({ host: '127.0.0.1', port });
    socket.on('error', () => undefined);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.write(head('/v1/jobs:batch', Buffer.byteLength(refused)) + refused + head('/v1/jobs:batch', Buffer.byteLength(next)) + next);
    try {
      await waitFor('the second answer on the connection', () => /HTTP\/1\.1 202/.test(text) || undefined, { timeoutMs: 5_000 });
      expect([...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1])).toEqual(['503', '202']);
    } finally {
      socket.destroy();
    }
    expect((await held.finish()).status).toBe(202);
    await untilInFlight(0);
  });

  it('refuses a request at its headers once the bound is full, unread and its connection kept', async () => {
    const held = await heldBatch(batch(40)); // about 124 KB, alone, fills the bound
    expect(held.read).toBeGreaterThan(BOUND);
    const small = batch(1);
    const refused = await rawRequest(head('/v1/jobs:batch', Buffer.byteLength(small)) + small).answer;
    expect([refused.status, (refused.json as { error: { code: string } }).error.code]).toEqual([503, 'overloaded']);
    expect(refused.headers).toMatch(/\r\nretry-after: 1\r\n/);
    expect(refused.headers).not.toMatch(/\r\nconnection: close\r\n/);
    expect(await bytesInFlight()).toBe(held.read);
    expect((await held.finish()).status).toBe(202);
    await untilInFlight(0);
  });

  it('counts the bytes read, not the Content-Length announced: a client announcing a large body and sending little holds little', async () => {
    const slow = rawRequest(head('/v1/jobs:batch', 900_000) + '{"jobs": [');
    await untilInFlight(Buffer.byteLength('{"jobs": ['));
    expect((await post(batch(30))).status).toBe(202); // about 93 KB: fits beside the 10 bytes read
    slow.socket.destroy();
    await untilInFlight(0);
  });

  it('gives back what pipelined requests held when their client drops the connection before they are answered', async () => {
    let open = (): void => undefined;
    publishGate = new Promise((resolve) => (open = resolve));
    try {
      const first = batch(1);
      const second = batch(20);
      // The first is read and waits on its publish; the second's response has no socket yet.
      const socket = connect({ host: '127.0.0.1', port });
      socket.on('error', () => undefined);
      socket.write(head('/v1/jobs:batch', Buffer.byteLength(first)) + first + head('/v1/jobs:batch', Buffer.byteLength(second)) + second.slice(0, -100));
      await untilInFlight(Buffer.byteLength(first) + Buffer.byteLength(second) - 100);
      socket.destroy();
      await untilInFlight(0);
    } finally {
      publishGate = undefined;
      open();
    }
  });

  it('leaves no listener behind on a keep-alive connection: many requests on one give no MaxListenersExceededWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const sockets = new Set<unknown>();
      for (let i = 0; i < 15; i++) {
        const status = await new Promise<number | undefined>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, path: '/v1/jobs:batch', method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
            sockets.add(res.socket);
            res.resume();
            res.on('end', () => resolve(res.statusCode));
          });
          req.on('error', reject);
          req.end(batch(1));
        });
        expect(status).toBe(202);
      }
      expect(sockets.size).toBe(1);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      agent.destroy();
      process.off('warning', onWarning);
    }
  });

  it('serves a body larger than the whole bound when nothing else is in flight', async () => {
    const large = batch(40); // about 124 KB
    expect(Buffer.byteLength(large)).toBeGreaterThan(BOUND);
    expect((await post(large)).status).toBe(202);
    expect(await bytesInFlight()).toBe(0);
  });

  it('gives back what a request held when its client aborts mid-body, when it is refused 400, and when its JSON is malformed', async () => {
    const aborted = await heldBatch(batch(20));
    aborted.abort();
    await untilInFlight(0);
    const bad = JSON.parse(batch(5)) as { jobs: Array<Record<string, unknown>> };
    delete bad.jobs[3]?.['app'];
    const refused = await post(JSON.stringify(bad));
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ error: { code: 'invalid-request', issues: [{ path: 'jobs.3.app' }] } });
    expect(await bytesInFlight()).toBe(0);
    const malformed = await post('{"jobs": [');
    expect([malformed.status, (malformed.json as { error: { code: string } }).error.code]).toEqual([400, 'malformed-json']);
    expect(await bytesInFlight()).toBe(0);
  });

  it('counts a chunked body by the bytes read: refused 503 mid-body when they fill the bound beside another request, given back when answered', async () => {
    const held = await heldBatch(batch(20));
    const chunked = rawRequest(head('/v1/jobs:batch', 'chunked'));
    const body = batch(20);
    chunked.send(`${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    const refused = await chunked.answer;
    expect([refused.status, (refused.json as { error: { code: string } }).error.code]).toEqual([503, 'overloaded']);
    expect(refused.headers).toMatch(/\r\nretry-after: 1\r\n/);
    expect((await held.finish()).status).toBe(202);
    await untilInFlight(0);
    // Alone, the same chunked body is read and published.
    const accepted = await new Promise<number | undefined>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/v1/jobs:batch', method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      });
      req.on('error', reject);
      req.write(body.slice(0, 1000));
      req.end(body.slice(1000));
    });
    expect(accepted).toBe(202);
    await untilInFlight(0);
  });
});
