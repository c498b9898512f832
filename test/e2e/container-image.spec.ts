// The container image (Dockerfile, compose.yaml, infra/container). No container engine runs
// here, so the image is never built in these tests: the Dockerfile is linted with
// dockerfile-utils (the validator behind the Docker language server) plus this project's own
// rules, compose.yaml is parsed and checked against the services, and the image's commands
// (entry point, prepare, healthcheck) run on this machine's Node against the built bundles.
// Not tested: `docker build` (npm ci and the build inside node:20-bookworm-slim), the running
// containers, compose's healthchecks, network_mode and volumes.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { validate, ValidationSeverity, type ValidatorSettings } from 'dockerfile-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { commonConfig, loadConfig } from '@herald/config';
import { Queues } from '@herald/contracts';
import { createDatabase, dropSchemaAndClose, type Database } from '@herald/db';
import { createTestVhost, queueInfo, TEST_DATABASE_URL, type TestVhost } from '@herald/testing';
import { SANDBOX, SERVICES } from '../../infra/local/service-list.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const ALL_SERVICES = [SANDBOX.name, ...SERVICES.map((s) => s.name)].sort();
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

/** Every check dockerfile-utils can be told about, as an error. */
const STRICT: ValidatorSettings = Object.fromEntries(
  [
    'deprecatedMaintainer',
    'directiveCasing',
    'emptyContinuationLine',
    'instructionCasing',
    'instructionCmdMultiple',
    'instructionEntrypointMultiple',
    'instructionHealthcheckMultiple',
    'instructionJSONInSingleQuotes',
    'instructionWorkdirRelative',
  ].map((k) => [k, ValidationSeverity.ERROR]),
);

/** Instructions, continuation lines joined, comments dropped. */
function instructions(text: string): Array<{ keyword: string; args: string }> {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const [keyword = '', ...rest] = l.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    });
}

describe('Dockerfile', () => {
  it('passes the dockerfile-utils validator with every check an error (and the validator does catch problems)', () => {
    expect(validate(dockerfile, STRICT).map((d) => `line ${d.range.start.line + 1}: ${d.message}`)).toEqual([]);
    const broken =
      'FROM node:20-slim\nMAINTAINER me\nWORKDIR app\nHEALTHCHECK --interval=5 CMD true\nCMD ["node"]\nCMD ["node"]\n';
    expect(validate(broken, STRICT)).toHaveLength(4);
  });

  it('builds in stages and runs as a non-root user, with exec-form entry point and healthcheck', () => {
    const all = instructions(dockerfile);
    const stages = all.filter((i) => i.keyword === 'FROM');
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const last = stages.at(-1);
    const runtime = last === undefined ? [] : all.slice(all.lastIndexOf(last));
    const users = runtime.filter((i) => i.keyword === 'USER').map((i) => i.args);
    expect(users.at(-1)).toBeDefined();
    expect(['root', '0'].includes(users.at(-1) ?? 'root')).toBe(false);
    // Base images pinned to a Node major on a slim Debian, never "latest".
    const baseArg = all.find((i) => i.keyword === 'ARG' && i.args.startsWith('NODE_IMAGE='))?.args;
    expect(baseArg).toMatch(/^NODE_IMAGE=node:\d+-[a-z]+-slim$/);
    expect(stages.every((s) => /^\$\{NODE_IMAGE\}\s+AS\s+\w+$/i.test(s.args))).toBe(true);
    for (const keyword of ['ENTRYPOINT', 'CMD']) {
      const found = runtime.filter((i) => i.keyword === keyword);
      expect(found).toHaveLength(1);
      expect(() => JSON.parse(found[0]?.args ?? '') as unknown).not.toThrow();
    }
    expect(runtime.find((i) => i.keyword === 'HEALTHCHECK')?.args).toMatch(
      /CMD \["node", "infra\/container\/healthcheck\.mjs"\]$/,
    );
    expect(all.some((i) => i.keyword === 'ADD')).toBe(false);
    expect(
      all
        .filter((i) => i.keyword === 'RUN')
        .some((i) => /npm ci\b/.test(i.args) && /npm run build/.test(i.args) && /npm prune --omit=dev/.test(i.args)),
    ).toBe(true);
  });
});

describe('compose.yaml', () => {
  type Service = {
    image?: string;
    build?: unknown;
    command?: string[];
    healthcheck?: { test?: unknown; disable?: boolean };
    depends_on?: Record<string, { condition?: string }>;
    environment?: Record<string, string>;
    ports?: string[];
    stop_grace_period?: string;
  };
  const compose = parse(readFileSync(join(ROOT, 'compose.yaml'), 'utf8'), { merge: true }) as {
    services: Record<string, Service>;
  };
  const services = compose.services;

  it('runs RabbitMQ, PostgreSQL, prepare and every Herald service, each from the one image with a command it knows', () => {
    expect(Object.keys(services).sort()).toEqual(['postgres', 'prepare', 'rabbitmq', ...ALL_SERVICES].sort());
    for (const name of [...ALL_SERVICES, 'prepare']) {
      expect(services[name]?.image, name).toBe('herald:local');
      expect(services[name]?.build, name).toBe('.');
    }
    for (const name of ALL_SERVICES) expect(services[name]?.command, name).toEqual([name]);
    expect(services['prepare']?.command).toEqual(['prepare']);
    expect(services['rabbitmq']?.image).toMatch(/^rabbitmq:[\d.]+-management$/);
    expect(services['postgres']?.image).toMatch(/^postgres:\d+$/);
  });

  it('starts things in order: brokers healthy, then prepare done, then the services; ports only on the loopback', () => {
    expect(services['rabbitmq']?.healthcheck?.test).toBeDefined();
    expect(services['postgres']?.healthcheck?.test).toBeDefined();
    expect(services['prepare']?.depends_on).toEqual({
      rabbitmq: { condition: 'service_healthy' },
      postgres: { condition: 'service_healthy' },
    });
    for (const name of ALL_SERVICES) {
      expect(services[name]?.depends_on?.['prepare'], name).toEqual({ condition: 'service_completed_successfully' });
      expect(services[name]?.environment?.['AMQP_URL'], name).toMatch(/@rabbitmq:5672\//);
      expect(services[name]?.environment?.['DATABASE_URL'], name).toMatch(/@postgres:5432\//);
      for (const port of services[name]?.ports ?? []) expect(port, name).toMatch(/^127\.0\.0\.1:/);
    }
    for (const pusher of ['apns-pusher', 'fcm-pusher'])
      expect(services[pusher]?.depends_on?.['sandbox']).toEqual({ condition: 'service_healthy' });
  });

  it("gives every service the time its stop may take before Docker's SIGKILL: SHUTDOWN_TIMEOUT_MS and the 5 s the runtime may overrun it by, and a margin", () => {
    for (const name of ALL_SERVICES) {
      const { SHUTDOWN_TIMEOUT_MS } = loadConfig(commonConfig, services[name]?.environment ?? {});
      const grace = /^(\d+)s$/.exec(services[name]?.stop_grace_period ?? '')?.[1];
      expect(grace, `${name}: stop_grace_period in seconds`).toBeDefined();
      expect(Number(grace) * 1000, name).toBeGreaterThanOrEqual(SHUTDOWN_TIMEOUT_MS + 5_000 + 2_000);
    }
  });
});

describe("the image's commands, on this machine's Node", () => {
  let vhost: TestVhost;
  // A schema prepare creates and migrates (a test database would come migrated already).
  const schema = `herald_image_${randomBytes(4).toString('hex')}`;
  let database: Database;
  const run = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, LOG_FORMAT: 'json', ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });

  beforeAll(async () => {
    vhost = await createTestVhost('image');
    database = createDatabase({ url: TEST_DATABASE_URL, schema, poolSize: 2 });
  });
  afterAll(async () => {
    await vhost.delete();
    await dropSchemaAndClose(database);
  });

  it('help lists every service; an unknown command exits 2 and says so', () => {
    const help = run(['infra/container/entrypoint.mjs', 'help']);
    expect(help.status).toBe(0);
    for (const name of ALL_SERVICES) expect(help.stdout).toContain(name);
    const unknown = run(['infra/container/entrypoint.mjs', 'nosuch']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('unknown command "nosuch"');
  });

  it('prepare applies the topology and the migrations (and the demo app), a service runs, and the healthcheck follows it', async () => {
    const env = { AMQP_URL: vhost.amqpUrl, DATABASE_URL: TEST_DATABASE_URL, DATABASE_SCHEMA: schema };
    const prepare = run(['infra/container/entrypoint.mjs', 'prepare'], { ...env, HERALD_DEMO_APP: 'true' });
    expect(prepare.status, prepare.stdout + prepare.stderr).toBe(0);
    expect(await queueInfo(vhost.name, Queues.registrations)).toBeDefined();
    expect((await database.apps.get('demo'))?.apnsTopic).toBe('com.herald.demo'); // its table exists: migrated

    const port = await freePort();
    const health = () => run(['infra/container/healthcheck.mjs'], { HTTP_PORT: String(port) }).status;
    expect(health()).toBe(1); // nothing listens yet
    const service = spawn(process.execPath, ['infra/container/entrypoint.mjs', 'registrar'], {
      cwd: ROOT,
      env: { ...process.env, ...env, LOG_FORMAT: 'json', HTTP_PORT: String(port) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => service.on('exit', (code) => resolve(code)));
    try {
      let output = '';
      service.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const deadline = Date.now() + 30_000;
      while (!output.includes('"msg":"registrar started"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(output).toContain('"msg":"registrar started"');
      expect(health()).toBe(0);
    } finally {
      service.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(health()).toBe(1);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}
