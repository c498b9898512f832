import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestVhost, type TestVhost } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let vhost: TestVhost;
beforeAll(async () => {
  vhost = await createTestVhost('clistatus');
});
afterAll(() => vhost?.delete());

/** `herald status --json` as a person runs it, asking the monitor at `monitorUrl` with an operator key. */
function statusFrom(monitorUrl: string): Promise<{ source: string; note: string }> {
  const env = { ...process.env, AMQP_URL: vhost.amqpUrl, MONITOR_URL: monitorUrl, HERALD_OPERATOR_KEY: 'hko_spec' };
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'apps/cli/src/main.ts', 'status', '--json'],
      { env, encoding: 'utf8' },
      (err, stdout, stderr) =>
        err === null
          ? resolve(JSON.parse(stdout) as { source: string; note: string })
          : reject(new Error(`herald status failed: ${stderr}`)),
    );
  });
}

/** A monitor that answers every request with this status and body. */
async function monitorAnswering(status: number, body: string): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => res.writeHead(status, { 'content-type': 'application/json' }).end(body));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('herald status when the monitor answers with an error', () => {
  // A 503 (the monitor cannot check the key: PostgreSQL is down) was reported as "no monitor".
  it('says what the monitor answered, and still shows the view computed locally', async () => {
    const monitor = await monitorAnswering(503, '{"error":"the database that holds operator keys is unreachable"}');
    try {
      const view = await statusFrom(monitor.url);
      expect(view.source).toBe('local');
      expect(view.note).toBe(
        `computed locally (the monitor at ${monitor.url} answered HTTP 503: the database that holds operator keys is unreachable): alarms are conditions holding now, without the monitor's durations`,
      );
    } finally {
      monitor.server.close();
    }
  });

  it('says "no monitor" when nothing answers there', async () => {
    const monitor = await monitorAnswering(200, '{}');
    monitor.server.close();
    const view = await statusFrom(monitor.url);
    expect(view).toMatchObject({
      source: 'local',
      note: expect.stringContaining(`no monitor for vhost ${vhost.name} at ${monitor.url}`) as unknown,
    });
  });
});
