import { request } from 'node:http';
import { connect } from 'node:net';
import { createLogger, type Logger } from '@herald/logging';
import { Registry, startOpsServer } from '@herald/runtime';
import { ParkedQueueBusy } from '@herald/db';
import { describe, expect, it, vi } from 'vitest';
import { dashboardRoutes, type DashboardDeps } from './dashboard-routes.ts';
import { createOperatorGate } from './operator-gate.ts';
import type { QueueMonitor } from './queue-monitor.ts';

/** An operator key in the format Herald mints (OPERATOR_KEY_FORMAT), named for the test. */
const opKey = (name: string): string => `hko_${'0'.repeat(12)}_${name.padEnd(43, '0')}`;

const TTL_MS = 5_000;
const silent = createLogger({ service: 'dashboard-routes-spec', level: 'silent' });

/** The dashboard's routes on a real HTTP server, with the real operator gate over an api_keys that can stop answering. */
async function dashboardServer(logger: Logger = silent) {
  const live = new Set([opKey('good'), opKey('other')]);
  const db = { down: false };
  const clock = { t: 0 };
  const keys = {
    findOperatorByKey: async (key: string) => {
      if (db.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
      return live.has(key) ? { id: key, name: 'ann' } : undefined;
    },
  };
  const monitor = { state: () => ({ vhost: 'v1', at: '2026-12-07T00:00:00.000Z', pollMs: 1000, error: null, queues: [], alarms: [] }) } as unknown as QueueMonitor;
  const routes = dashboardRoutes({
    page: '<p>the dashboard</p>',
    loginPage: '<p>log in</p>',
    gate: createOperatorGate(keys, TTL_MS, silent, () => clock.t),
    monitor,
    scheduled: () => ({ at: null, hours: [] }),
    logger,
  } as unknown as DashboardDeps);
  const server = await startOpsServer({ port: 0, registry: new Registry(), healthy: () => true, ready: () => ({ ready: true, problems: [] }), routes: () => routes });
  const ask = (path: string, init: RequestInit = {}) => fetch(`http://127.0.0.1:${server.port}${path}`, init);
  /** A request with exactly these raw headers (name, value, name, value, …: one may come twice), as a browser or proxy sends them. */
  const send = (method: string, path: string, rawHeaders: string[], body?: string) =>
    new Promise<{ status: number; setCookie: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: server.port, method, path, headers: [`host`, `127.0.0.1:${server.port}`, ...rawHeaders] }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, setCookie: String(res.headers['set-cookie'] ?? '') }));
      });
      req.on('error', reject);
      req.end(body);
    });
  return { live, db, clock, ask, send, port: server.port, close: () => server.close() };
}

describe("the monitor's routes", () => {
  // `new URL` threw out of the request listener: one unauthenticated request stopped the monitor, and its alarms with it.
  it('answer 400 bad-url to a request target Node takes and URL cannot read, before anything else', async () => {
    // Nothing of the deps is reached for such a request.
    const routes = dashboardRoutes({} as DashboardDeps);
    const server = await startOpsServer({ port: 0, registry: new Registry(), healthy: () => true, ready: () => ({ ready: true, problems: [] }), routes: () => routes });
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(server.port, '127.0.0.1', () => socket.write('GET //[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
        let text = '';
        socket.on('data', (d) => (text += d.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('"code":"bad-url"');
      expect((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  // A list beside another operator's replay held none of the messages the replay held: "Nothing parked".
  it("answer 409 naming the holder when another operator's list, replay or purge holds the parked queue", async () => {
    const monitor = { state: () => ({ vhost: 'v1', at: null, pollMs: 1000, error: null, queues: [{ name: 'push.jobs.parked' }], alarms: [] }) } as unknown as QueueMonitor;
    const held: string[] = [];
    const routes = dashboardRoutes({
      gate: createOperatorGate({ findOperatorByKey: async (key) => (key === opKey('good') ? { id: 'op1', name: 'ann' } : undefined) }, TTL_MS, silent),
      monitor,
      amqpUrl: 'amqp://127.0.0.1:1/none',
      logger: silent,
      parkedLease: async (queue: string) => {
        held.push(queue);
        throw new ParkedQueueBusy(queue, 'herald bob@ops-2 (pid 3)', new Date('2026-12-07T01:00:00Z'));
      },
    } as unknown as DashboardDeps);
    const server = await startOpsServer({ port: 0, registry: new Registry(), healthy: () => true, ready: () => ({ ready: true, problems: [] }), routes: () => routes });
    try {
      const answer = await fetch(`http://127.0.0.1:${server.port}/api/parked/push.jobs`, { headers: { authorization: `Bearer ${opKey('good')}` } });
      expect(answer.status).toBe(409);
      expect(((await answer.json()) as { error: string }).error).toBe(
        'push.jobs.parked is being read by herald bob@ops-2 (pid 3) (since 2026-12-07T01:00:00.000Z): a list, replay or purge holds the messages it reads until it ends, so another would miss them; try again when it is done',
      );
      expect(held).toEqual(['push.jobs.parked']);
    } finally {
      await server.close();
    }
  });

  // PostgreSQL going down took the dashboard with it (500 on every request within 5 s), so the
  // on-call operator never saw the monitor's database-unreachable alarm.
  it('keep serving a logged-in operator while the database is down, answer 503 naming it for a key it cannot check, and refuse a revoked key once it answers', async () => {
    const d = await dashboardServer();
    try {
      const login = await d.ask('/api/login', { method: 'POST', headers: { 'content-type': 'application/json', 'x-herald-csrf': '1' }, body: JSON.stringify({ key: opKey('good') }) });
      expect(login.status).toBe(200);
      const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';

      d.db.down = true;
      d.clock.t += TTL_MS;
      const status = await d.ask('/api/status', { headers: { cookie } });
      expect(status.status).toBe(200);
      expect(await status.json()).toMatchObject({ vhost: 'v1', alarms: [] });
      expect((await d.ask('/', { headers: { cookie } })).status).toBe(200);
      const unchecked = await d.ask('/api/status', { headers: { authorization: `Bearer ${opKey('other')}` } });
      expect(unchecked.status).toBe(503);
      expect(await unchecked.json()).toEqual({ error: 'the database that holds operator keys is unreachable' });
      const newLogin = await d.ask('/api/login', { method: 'POST', headers: { 'content-type': 'application/json', 'x-herald-csrf': '1' }, body: JSON.stringify({ key: opKey('other') }) });
      expect(newLogin.status).toBe(503);

      d.db.down = false;
      d.live.delete(opKey('good'));
      d.clock.t += TTL_MS;
      expect((await d.ask('/api/status', { headers: { cookie } })).status).toBe(401);
      expect((await d.ask('/api/status', { headers: { authorization: `Bearer ${opKey('good')}` } })).status).toBe(401);
    } finally {
      await d.close();
    }
  });
});

describe('the dashboard login', () => {
  const loginHeaders = ['content-type', 'application/json', 'x-herald-csrf', '1'];
  const body = JSON.stringify({ key: opKey('good') });

  // Only `X-Forwarded-Proto: https` exactly gave the cookie Secure: Node joins the header sent twice
  // as "https, https", a proxy chain appends ("http, https"), and some proxies send none.
  it('marks its cookie Secure when any X-Forwarded-Proto value is https, or the Origin is https:, and not otherwise', async () => {
    const d = await dashboardServer();
    try {
      const secure = async (...headers: string[]) => {
        const answer = await d.send('POST', '/api/login', [...loginHeaders, ...headers], body);
        expect(answer.status, headers.join(' ')).toBe(200);
        return /; Secure$/.test(answer.setCookie);
      };
      expect(await secure()).toBe(false);
      expect(await secure('x-forwarded-proto', 'https')).toBe(true);
      expect(await secure('x-forwarded-proto', 'https', 'x-forwarded-proto', 'https')).toBe(true);
      expect(await secure('x-forwarded-proto', 'http, HTTPS')).toBe(true);
      expect(await secure('x-forwarded-proto', 'http')).toBe(false);
      expect(await secure('origin', `https://127.0.0.1:${d.port}`)).toBe(true);
      expect(await secure('origin', `http://127.0.0.1:${d.port}`)).toBe(false);
    } finally {
      await d.close();
    }
  });
});

// A wrong bearer key, or a cross-site write riding a named operator's session, left no line.
describe("refusals at the dashboard's door", () => {
  it('are logged at warn with the address, X-Forwarded-For, the path and the operator identified, never the key, once per few seconds', async () => {
    const logger = createLogger({ service: 'dashboard-routes-spec', level: 'silent' });
    const warn = vi.spyOn(logger, 'warn');
    const d = await dashboardServer(logger);
    try {
      const wrong = opKey('wrong');
      for (let i = 0; i < 3; i++) expect((await d.send('GET', '/api/status', ['authorization', `Bearer ${wrong}`, 'x-forwarded-for', '203.0.113.7'])).status).toBe(401);
      expect((await d.send('GET', '/', ['authorization', `Bearer ${wrong}`])).status).toBe(401);
      const login = await d.send('POST', '/api/login', ['content-type', 'application/json', 'x-herald-csrf', '1'], JSON.stringify({ key: opKey('good') }));
      const cookie = login.setCookie.split(';')[0] ?? '';
      const forged = await d.send('POST', '/api/parked/push.jobs/replay', ['cookie', cookie, 'content-type', 'application/json', 'origin', 'http://evil.example'], '{"id":"x"}');
      expect(forged.status).toBe(403);
      expect((await d.send('POST', '/api/login', ['content-type', 'application/json'], JSON.stringify({ key: wrong }))).status).toBe(403);

      const lines = warn.mock.calls.map(([fields, msg]) => [msg, fields] as const);
      expect(lines).toEqual([
        [
          'dashboard request refused',
          expect.objectContaining({ status: 401, remote: '127.0.0.1', forwardedFor: '203.0.113.7', method: 'GET', path: '/api/status', credential: 'bearer' }),
        ],
        [
          'dashboard request refused',
          expect.objectContaining({ status: 403, remote: '127.0.0.1', method: 'POST', path: '/api/parked/push.jobs/replay', credential: 'cookie', operator: { id: opKey('good'), name: 'ann' }, reason: expect.stringMatching(/^cross-origin request refused/) as unknown }),
        ],
        ['dashboard request refused', expect.objectContaining({ status: 403, path: '/api/login', credential: 'none' })],
      ]);
      expect(JSON.stringify(lines)).not.toContain(wrong);
    } finally {
      await d.close();
    }
  });
});
