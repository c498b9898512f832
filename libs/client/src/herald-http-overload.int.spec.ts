import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { Queues } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology } from '@herald/messaging';
import {
  createTestDatabase,
  createTestVhost,
  queueInfo,
  startTcpProxyFor,
  waitFor,
  type TcpProxy,
  type TestDatabase,
  type TestVhost,
} from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeraldApiError, createHeraldHttpClient, type HeraldHttpClientOptions } from './herald-http-client.ts';

// The HTTP client against the real API process (apps/api/src/main.ts, run as `npm start` runs it:
// a lib may not import an app) on its own schema and vhost, its RabbitMQ behind a TCP proxy the
// test can freeze. API_MAX_BODY_BYTES_IN_FLIGHT is its least, 1 KiB: a raw connection that sends
// the headers and 2 KB of a 100 KB body holds the bound full, so the API refuses every other request
// with a body at its headers, 503 overloaded with Retry-After: 1, until that connection closes.
const ROOT = join(import.meta.dirname, '../../..');
const PRELOAD = pathToFileURL(join(ROOT, 'infra/local/supervised-service.mjs')).href;
const HELD_BYTES = 2_000;
let t: TestDatabase;
let vhost: TestVhost;
let amqp: TcpProxy;
let api: ChildProcess;
let apiUrl: string;
let opsUrl: string;
let key: string;

beforeAll(async () => {
  t = await createTestDatabase('client_overload');
  vhost = await createTestVhost('client-overload');
  const broker = await connectBroker({
    url: vhost.amqpUrl,
    logger: createLogger({ service: 'client-test', level: 'silent' }),
    connectionName: 'client-overload-test',
  });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
  await broker.close();
  await t.db.apps.upsert({ id: 'demo' });
  key = (await t.db.apiKeys.create('team-demo', ['demo'])).key;
  amqp = await startTcpProxyFor(vhost.amqpUrl);
  const started = await startApi({
    AMQP_URL: amqp.urlFor(vhost.amqpUrl),
    DATABASE_URL: t.url,
    DATABASE_SCHEMA: t.schema,
    API_MAX_BODY_BYTES_IN_FLIGHT: '1024',
    API_PUBLISH_CONFIRM_TIMEOUT_MS: '500',
  });
  api = started.child;
  apiUrl = `http://127.0.0.1:${started.apiPort}`;
  opsUrl = `http://127.0.0.1:${started.opsPort}`;
});
afterAll(async () => {
  if (api !== undefined && api.exitCode === null) await new Promise((resolve) => api.once('exit', resolve).kill('SIGTERM'));
  await amqp?.close();
  await vhost?.delete();
  await t?.drop();
});

/** The API as a process on free ports; resolves once it listens. */
async function startApi(env: Record<string, string>): Promise<{ child: ChildProcess; apiPort: number; opsPort: number }> {
  const child = spawn(process.execPath, ['--import', PRELOAD, '--import', 'tsx', 'apps/api/src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...env,
      API_PORT: '0',
      HTTP_PORT: '0',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      HERALD_SUPERVISOR_PID: String(process.pid),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  createInterface({ input: child.stderr }).on('line', (line) => lines.push(line));
  return new Promise((resolve, reject) => {
    let opsPort: number | undefined;
    child.once('exit', (code) => reject(new Error(`the API exited (${code}) before it listened:\n${lines.join('\n')}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      if (!line.startsWith('{')) return;
      const entry = JSON.parse(line) as { opsPort?: number; apiPort?: number };
      opsPort ??= entry.opsPort;
      if (entry.apiPort !== undefined && opsPort !== undefined) resolve({ child, apiPort: entry.apiPort, opsPort });
    });
  });
}

/** A metric of the API's /metrics, summed over the series whose labels include `labels` (e.g. 'status="503"'). */
async function metric(name: string, ...labels: string[]): Promise<number> {
  const text = await (await fetch(`${opsUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .filter((line) => labels.every((label) => line.includes(label)))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}
const refusals = (): Promise<number> => metric('herald_api_overload_refusals_total');

/** A connection holding HELD_BYTES of an announced 100 KB body: the bound is full until release() closes it. */
async function holdBound(): Promise<{ release: () => Promise<void> }> {
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(apiUrl).port) });
  socket.on('error', () => undefined);
  const head = [
    'POST /v1/jobs:batch HTTP/1.1',
    'host: 127.0.0.1',
    'content-type: application/json',
    `authorization: Bearer ${key}`,
    'content-length: 100000',
  ];
  socket.write(`${head.join('\r\n')}\r\n\r\n${' '.repeat(HELD_BYTES)}`);
  await waitFor('the bound held', async () => (await metric('herald_api_body_bytes_in_flight')) === HELD_BYTES || undefined);
  return {
    release: async () => {
      socket.destroy();
      await waitFor('the bound released', async () => (await metric('herald_api_body_bytes_in_flight')) === 0 || undefined);
    },
  };
}

const client = (options: Partial<HeraldHttpClientOptions> = {}) =>
  createHeraldHttpClient({ url: apiUrl, apiKey: key, ...options });
const user = (): string => `u-${randomBytes(4).toString('hex')}`;
const apnsToken = (): string => randomBytes(32).toString('hex');
const failure = async (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => new Error('expected a rejection'),
    (err: unknown) => err,
  );

describe('the HTTP client and an overloaded API (503 overloaded, Retry-After)', () => {
  it('sends a refused request again after Retry-After: the call succeeds once the API has room', async () => {
    const held = await holdBound();
    const before = await refusals();
    const registrationsBefore = (await queueInfo(vhost.name, Queues.registrations))?.messages ?? 0;
    const [who, token] = [user(), apnsToken()];
    const startedAt = performance.now();
    const calls = Promise.all([
      client().optOut({ app: 'demo', userId: who, category: 'news' }),
      client().registerDevice({ app: 'demo', userId: who, platform: 'apns', token }),
    ]);
    // Both were refused once; the bound is released while they wait their Retry-After.
    await waitFor('both calls refused', async () => (await refusals()) >= before + 2 || undefined);
    await held.release();
    const [view] = await calls;
    expect(view).toMatchObject({ app: 'demo', userId: who, category: 'news' });
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(1_000);
    // At least once each (a third refusal, were the release slow on a loaded machine, is sent again too).
    expect(await refusals()).toBeGreaterThanOrEqual(before + 2);
    expect((await client().listOptOuts({ app: 'demo', userId: who })).optOuts.map((o) => o.category)).toEqual(['news']);
    await waitFor(
      'the registration published',
      async () => ((await queueInfo(vhost.name, Queues.registrations))?.messages ?? 0) === registrationsBefore + 1 || undefined,
    );
  });

  it('with overloadRetries 0 throws the 503 at once, with the Retry-After for the caller to honour', async () => {
    const held = await holdBound();
    try {
      const before = await refusals();
      const err = await failure(client({ overloadRetries: 0 }).optOut({ app: 'demo', userId: user(), category: 'news' }));
      expect(err).toBeInstanceOf(HeraldApiError);
      expect(err).toMatchObject({ status: 503, code: 'overloaded', retryAfterS: 1, attempts: 1 });
      expect(await refusals()).toBe(before + 1);
    } finally {
      await held.release();
    }
  });

  it('does not wait a Retry-After longer than timeoutMs: throws that 503 at once, not a TimeoutError', async () => {
    const held = await holdBound();
    try {
      const before = await refusals();
      const startedAt = performance.now();
      const err = await failure(client({ timeoutMs: 800 }).optOut({ app: 'demo', userId: user(), category: 'news' }));
      expect(err).toBeInstanceOf(HeraldApiError);
      expect(err).toMatchObject({
        status: 503,
        code: 'overloaded',
        retryAfterS: 1,
        attempts: 1,
        message: expect.stringMatching(/sent once: its Retry-After is longer than timeoutMs \(800 ms\)$/) as unknown,
      });
      expect(performance.now() - startedAt).toBeLessThan(1_000);
      expect(await refusals()).toBe(before + 1);
    } finally {
      await held.release();
    }
  });

  it('sends no request again after overloadRetries refusals', async () => {
    const held = await holdBound();
    try {
      const before = await refusals();
      const err = await failure(client({ overloadRetries: 1 }).optOut({ app: 'demo', userId: user(), category: 'news' }));
      expect(err).toMatchObject({
        status: 503,
        code: 'overloaded',
        attempts: 2,
        message: expect.stringMatching(/sent 2 times \(overloadRetries 1\)$/) as unknown,
      });
      expect(await refusals()).toBe(before + 2);
    } finally {
      await held.release();
    }
  });

  it('does not send again a 503 that is not overloaded: a registration RabbitMQ did not confirm may still arrive', async () => {
    const sent = () => metric('herald_api_requests_total', 'route="/v1/devices"', 'method="POST"');
    const before = await sent();
    amqp.freeze();
    try {
      const err = await failure(client().registerDevice({ app: 'demo', userId: user(), platform: 'apns', token: apnsToken() }));
      expect(err).toBeInstanceOf(HeraldApiError);
      expect(err).toMatchObject({ status: 503, code: 'broker-unavailable', attempts: 1 });
      // Had it been sent again, the next would come after its 1 s wait (and its own 0.5 s).
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await sent()).toBe(before + 1);
    } finally {
      amqp.thaw();
    }
  });
});
