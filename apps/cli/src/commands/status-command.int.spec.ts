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

/** `herald status` as a person runs it (its table), asking the monitor at `monitorUrl` with an operator key. */
function statusTableFrom(monitorUrl: string, args: readonly string[] = []): Promise<string> {
  const env = { ...process.env, AMQP_URL: vhost.amqpUrl, MONITOR_URL: monitorUrl, HERALD_OPERATOR_KEY: 'hko_spec' };
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', 'apps/cli/src/main.ts', 'status', ...args], { env, encoding: 'utf8' }, (err, stdout, stderr) =>
      err === null ? resolve(stdout) : reject(new Error(`herald status failed: ${stderr}`)),
    );
  });
}

/** `herald status --json`. */
const statusFrom = async (monitorUrl: string): Promise<{ source: string; note: string }> => JSON.parse(await statusTableFrom(monitorUrl, ['--json'])) as { source: string; note: string };

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

// A restarted monitor has not yet seen conditions that held before it for their delay: "no active
// alarms" at 04:59 hid a pusher dead since 02:00.
describe('herald status while the monitor is warming up after its start', () => {
  it('says alarms may still appear instead of "no active alarms", and marks an oldest age that is only a lower bound', async () => {
    const queue = { name: 'push.apns.send', kind: 'work', messages: 42, ready: 42, unacked: 0, consumers: 0, publishRate: 0, ackRate: 0, drainSeconds: null };
    const status = {
      vhost: vhost.name,
      at: '2026-12-07T04:59:02.000Z',
      queues: [{ ...queue, oldestAgeSeconds: 60, oldestAgeIsLowerBound: true }],
      alarms: [],
      pending: [],
      watchingSince: '2026-12-07T04:58:12.000Z',
      warmingUp: true,
      warmingUpUntil: '2026-12-07T05:00:12.000Z',
    };
    const monitor = await monitorAnswering(200, JSON.stringify(status));
    try {
      const table = await statusTableFrom(monitor.url);
      expect(table).toContain('watching since 04:58:12Z, alarms may still appear (until 05:00:12Z)');
      expect(table).not.toContain('no active alarms');
      expect(table).toMatch(/push\.apns\.send .* ≥60s\n/);

      // Once it has watched long enough, none firing is all clear.
      const settled = await monitorAnswering(200, JSON.stringify({ ...status, warmingUp: false, queues: [{ ...queue, oldestAgeSeconds: 60, oldestAgeIsLowerBound: false }] }));
      try {
        const later = await statusTableFrom(settled.url);
        expect(later).toContain('no active alarms');
        expect(later).not.toContain('alarms may still appear');
        expect(later).toMatch(/push\.apns\.send .* 60s\n/);
      } finally {
        settled.server.close();
      }
    } finally {
      monitor.server.close();
    }
  });
});
