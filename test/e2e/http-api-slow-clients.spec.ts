import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { sql } from 'kysely';
import { startTcpProxyFor, waitFor, type TcpProxy } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TEST_ENV, apiUrl, teamKey } from '../support/http-api.ts';
import type { ServiceProcess } from '../support/service-process.ts';
import { startExtraService, startSystem, type System } from '../support/system.ts';

const REQUEST_TIMEOUT_MS = 2000;
/** What a client announces and never sends: the API's default body limit. */
const ANNOUNCED = 2 * 1024 * 1024;

interface RawAnswer {
  /** The status line's code, or undefined when nothing came back. */
  status: number | undefined;
  text: string;
  /** From the request's last byte to the server closing the connection (or to `giveUpMs`). */
  elapsedMs: number;
  closedByServer: boolean;
}

/**
 * Sends `head` (and `bodyStart`, the first bytes of a body it announced) on a fresh connection and
 * sends nothing more; resolves when the server closes the connection, or after giveUpMs.
 */
function stalledRequest(sys: System, head: string[], bodyStart = '', giveUpMs = 3 * REQUEST_TIMEOUT_MS): Promise<RawAnswer> {
  const { hostname, port } = new URL(apiUrl(sys));
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let text = '';
    let sentAt = 0;
    const done = (closedByServer: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]) || undefined,
        text,
        elapsedMs: performance.now() - sentAt,
        closedByServer,
      });
    };
    const timer = setTimeout(() => done(false), giveUpMs);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('close', () => done(true));
    socket.on('error', (err) => (text.length > 0 ? done(true) : reject(err)));
    socket.on('connect', () => {
      socket.write(`${head.join('\r\n')}\r\n\r\n${bodyStart}`, () => (sentAt = performance.now()));
    });
  });
}

const post = (path: string, ...headers: string[]) => [
  `POST ${path} HTTP/1.1`,
  'host: 127.0.0.1',
  'content-type: application/json',
  `content-length: ${ANNOUNCED}`,
  ...headers,
];

/** A client cannot hold the API's memory: without a key it is refused before its body is read, and every request must arrive whole in time. */
describe('HTTP API: slow and keyless clients', () => {
  let sys: System;
  let key: string;

  beforeAll(async () => {
    sys = await startSystem({ only: ['api'], env: { ...API_TEST_ENV, API_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) } });
    key = await teamKey(sys, 'team-demo', ['demo']);
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it('answers a request without a key, or with a wrong one, 401 before its body arrives, and closes the connection', async () => {
    const requests = [
      post('/v1/jobs'),
      post('/v1/jobs', 'authorization: Bearer hk_wrong'),
      post('/v1/topics/news/subscriptions', 'x-api-key: hk_wrong'),
      post('/admin/apps'),
      post('/admin/keys', `authorization: Bearer ${key}`), // a team key never opens /admin
    ];
    for (const head of requests) {
      const answer = await stalledRequest(sys, head, '{"id":');
      expect(answer.status, `${head[0]}: ${answer.text}`).toBe(401);
      expect(answer.text).toContain('"code":"unauthorized"');
      expect(answer.closedByServer).toBe(true);
      expect(answer.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS);
    }
  });

  it('answers a request to no route 404 before its body arrives, and closes the connection', async () => {
    for (const head of [post('/nowhere'), post('/healthz'), post('//v1/jobs')]) {
      const answer = await stalledRequest(sys, head, '{"id":');
      expect(answer.status, `${head[0]}: ${answer.text}`).toBe(404);
      expect(answer.text).toContain('"code":"no-route"');
      expect(answer.closedByServer).toBe(true);
      expect(answer.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS);
    }
  });

  it('answers a request whose body stalls 408 after the request timeout and closes its connection', async () => {
    const answer = await stalledRequest(sys, post('/v1/jobs', `authorization: Bearer ${key}`), '{"id":"stalled","app":"demo"');
    expect(answer.status, answer.text).toBe(408);
    // In the API's error shape (Fastify's own was {"error": "Request Timeout", …}, which a client reading ours broke on).
    expect(JSON.parse(answer.text.slice(answer.text.indexOf('{')))).toEqual({ error: { code: 'request-timeout', message: 'the request did not arrive whole within the request timeout' } });
    expect(answer.closedByServer).toBe(true);
    expect(answer.elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(answer.elapsedMs).toBeLessThan(1.5 * REQUEST_TIMEOUT_MS);
  });

  // A rollout stops API replicas while clients keep pooled connections to them.
  it("stopped while a client posts on a kept-alive connection, answers every request on it in the API's shape, the last with Connection: close, and exits 0 at once", async () => {
    const api = await startExtraService(sys, 'api', {});
    const port = Number(api.logs.findLast((l) => typeof l['apiPort'] === 'number')?.['apiPort']);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const answers: Array<{ status: number | undefined; connection: string | undefined; body: string }> = [];
    let n = 0;
    const postJob = (): Promise<boolean> =>
      new Promise((resolve) => {
        const body = JSON.stringify({ id: `drain-${Date.now()}-${n++}`, app: 'demo', userId: 'u-drain', category: 'social', content: { title: 'hi' } });
        const req = request({ host: '127.0.0.1', port, path: '/v1/jobs', method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (d: string) => (text += d));
          res.on('end', () => {
            answers.push({ status: res.statusCode, connection: res.headers.connection, body: text });
            resolve(true);
          });
        });
        // Once the API has stopped listening, the next connection is refused: the client goes elsewhere.
        req.on('error', () => resolve(false));
        req.end(body);
      });
    // One request on its way at every moment, on one connection.
    const poster = (async () => {
      while (await postJob());
    })();
    try {
      while (answers.length < 5) await new Promise((r) => setTimeout(r, 10));
      const started = performance.now();
      const exit = await api.stop('SIGTERM');
      const stoppedMs = performance.now() - started;
      await poster;
      expect(exit).toEqual({ code: 0, signal: null });
      expect(stoppedMs).toBeLessThan(5_000);
      // Fastify's own 503 ({"error":"Service Unavailable"}) broke clients reading the API's {error: {code}}.
      expect(answers.filter((a) => a.status !== 202)).toEqual([]);
      expect(answers.at(-1)?.connection).toBe('close');
      expect(answers.slice(0, 5).every((a) => a.connection === 'keep-alive')).toBe(true);
    } finally {
      agent.destroy();
    }
  });
});

/** A broker that blocks publishers (a memory or disk alarm) or stops answering must not hold every caller for good. */
describe('HTTP API: RabbitMQ stops answering', () => {
  const CONFIRM_TIMEOUT_MS = 500;
  let sys: System;
  let key: string;
  let proxy: TcpProxy;
  let api: ServiceProcess;
  const post = async (path: string, body: unknown) => {
    const port = api.logs.findLast((l) => typeof l['apiPort'] === 'number')?.['apiPort'];
    const started = performance.now();
    const res = await fetch(`http://127.0.0.1:${String(port)}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: ((await res.json()) as { error?: { code: string; message: string } }).error, elapsedMs: performance.now() - started };
  };

  beforeAll(async () => {
    sys = await startSystem({ only: ['api'], env: API_TEST_ENV });
    key = await teamKey(sys, 'team-demo', ['demo']);
    const broker = sys.env['AMQP_URL'] ?? '';
    proxy = await startTcpProxyFor(broker);
    api = await startExtraService(sys, 'api', { AMQP_URL: proxy.urlFor(broker), API_PUBLISH_CONFIRM_TIMEOUT_MS: String(CONFIRM_TIMEOUT_MS) });
  });
  afterAll(async () => {
    proxy?.thaw();
    await sys?.stop();
    await proxy?.close();
  });

  it('answers 503 broker-unavailable within the confirm deadline, for a job and a device alike; the job reposted later is accepted', async () => {
    const job = { id: `hang-${Date.now()}`, app: 'demo', userId: 'u-hang', category: 'social', content: { title: 'hi', body: 'there' } };
    proxy.freeze();
    const refused = await post('/v1/jobs', job);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body?.code).toBe('broker-unavailable');
    expect(refused.body?.message).toMatch(/no confirm within 500 ms/);
    expect(refused.elapsedMs).toBeLessThan(CONFIRM_TIMEOUT_MS + 5_000);
    const device = await post('/v1/devices', { app: 'demo', platform: 'fcm', token: `hang:APA91b${'f'.repeat(140)}`, userId: 'u-hang' });
    expect(device.status, JSON.stringify(device.body)).toBe(503);
    expect(device.body?.code).toBe('broker-unavailable');
    proxy.thaw();
    const again = await post('/v1/jobs', job);
    expect(again.status, JSON.stringify(again.body)).toBe(202);
  });

  // A job waiting for RabbitMQ's confirm when SIGTERM comes: its answer closes the connection, and the
  // stop ends with it, not at the bound (the answer said keep-alive, and the close waited to cut it).
  it('stopped while a job waits for its confirm, answers it 202 with Connection: close and exits at once', async () => {
    const port = Number(api.logs.findLast((l) => typeof l['apiPort'] === 'number')?.['apiPort']);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      proxy.freeze();
      const answered = new Promise<{ status: number | undefined; connection: string | undefined }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/v1/jobs', method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
          res.resume().on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection }));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ id: `drain-confirm-${Date.now()}`, app: 'demo', userId: 'u-drain', category: 'social', content: { title: 'hi' } }));
      });
      await new Promise((r) => setTimeout(r, 100));
      const started = performance.now();
      const stopped = api.stop('SIGTERM');
      await new Promise((r) => setTimeout(r, 100));
      proxy.thaw();
      expect(await answered).toEqual({ status: 202, connection: 'close' });
      expect(await stopped).toEqual({ code: 0, signal: null });
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      proxy.thaw();
      agent.destroy();
    }
  });
});

/** PostgreSQL alive but not answering in time (a lock held, an overloaded server): retryable, and the log names no user. */
describe('HTTP API: PostgreSQL does not answer in time', () => {
  let sys: System;
  let key: string;
  let api: ServiceProcess;

  beforeAll(async () => {
    sys = await startSystem({ only: ['api'], env: API_TEST_ENV });
    key = await teamKey(sys, 'team-demo', ['demo']);
    api = await startExtraService(sys, 'api', { DATABASE_QUERY_TIMEOUT_MS: '500' });
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it("answers a read past its bound 503 unavailable, not 500, and logs the route without the query's user id", async () => {
    const port = api.logs.findLast((l) => typeof l['apiPort'] === 'number')?.['apiPort'];
    const user = 'alice.erasable@example.com';
    const from = api.logs.length;
    // The devices table locked on one connection while the API reads it.
    const held = await sys.database.db.kysely.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      await sql`lock table devices in access exclusive mode`.execute(conn);
      try {
        const res = await fetch(`http://127.0.0.1:${String(port)}/v1/devices?app=demo&userId=${encodeURIComponent(user)}`, { headers: { authorization: `Bearer ${key}` } });
        return { status: res.status, body: (await res.json()) as { error?: { code: string } } };
      } finally {
        await sql`rollback`.execute(conn);
      }
    });
    expect(held.status, JSON.stringify(held.body)).toBe(503);
    expect(held.body.error?.code).toBe('unavailable');
    const logged = await waitFor('the failure logged', async () => {
      const lines = api.logs.slice(from).filter((l) => l['msg'] === 'api request failed');
      return lines.length > 0 && lines;
    });
    expect(logged).toHaveLength(1);
    expect(logged[0]?.['route']).toBe('/v1/devices');
    expect(JSON.stringify(api.logs.slice(from))).not.toContain('alice');
  });
});

