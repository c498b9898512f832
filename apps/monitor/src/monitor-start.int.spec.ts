import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { createDatabase, dropSchemaAndClose } from '@herald/db';
import { createTestVhost, MANAGEMENT_API, TEST_DATABASE_URL, waitFor, type TestVhost } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let vhost: TestVhost;
beforeAll(async () => {
  vhost = await createTestVhost('monitorstart');
});
afterAll(() => vhost?.delete());

type LogLine = Record<string, unknown> & { msg?: string };

/** The monitor's main.ts as a process (as the CLI's specs run theirs), its JSON log lines kept. */
function monitorProcess(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/monitor/src/main.ts'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const logs: LogLine[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      try {
        logs.push(JSON.parse(line) as LogLine);
      } catch {
        logs.push({ msg: line });
      }
    });
  }
  const logged = (what: string, match: (l: LogLine) => boolean, timeoutMs = 30_000): Promise<LogLine> =>
    waitFor(what, () => logs.find(match) ?? (child.exitCode !== null ? Promise.reject(new Error(`the monitor exited:\n${JSON.stringify(logs.slice(-5))}`)) : undefined), { timeoutMs });
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };
  return { logs, logged, stop };
}

const probe = async (port: number, path: '/healthz' | '/readyz') => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: (await res.json()) as unknown };
};

describe("the monitor's start before `prepare`", () => {
  // It must watch RabbitMQ whatever PostgreSQL answers: waiting for the migrations (as the other
  // services do) kept a monitor restarted during a restore, or with a schema behind, not ready and
  // raising no queue alarm for as long.
  it('starts and is ready while its schema lacks the migrations, and reads on once they have run', async () => {
    const schema = `herald_monitorstart_${randomBytes(4).toString('hex')}`;
    const monitor = monitorProcess({
      AMQP_URL: vhost.amqpUrl,
      RABBITMQ_API_URL: MANAGEMENT_API,
      DATABASE_URL: TEST_DATABASE_URL,
      DATABASE_SCHEMA: schema,
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      MONITOR_POLL_MS: '500',
      MONITOR_SCHEDULED_POLL_MS: '500',
      MONITOR_WEBHOOK_URL: '',
    });
    const db = createDatabase({ url: TEST_DATABASE_URL, schema, poolSize: 1 });
    try {
      const starting = await monitor.logged('its start', (l) => l.msg === 'monitor starting');
      const port = starting['opsPort'] as number;
      await monitor.logged('started', (l) => l.msg === 'monitor started', 15_000);
      expect(await probe(port, '/readyz')).toEqual({ status: 200, body: { ok: true } });
      expect(monitor.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('the schema lacks a migration this release needs'))).toBe(false);
      await db.migrate();
      expect(await probe(port, '/readyz')).toEqual({ status: 200, body: { ok: true } });
      expect(await monitor.stop()).toEqual({ code: 0, signal: null });
    } finally {
      await monitor.stop();
      await dropSchemaAndClose(db);
    }
  });
});
