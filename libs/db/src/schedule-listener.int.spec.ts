import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SPEC_DATABASE_URL } from './spec-database.ts';
import { listenForSchedules } from './schedule-listener.ts';

/** A TCP relay to PostgreSQL whose open connections can be frozen: bytes stop flowing both ways, nothing is closed (a flow a NAT dropped). */
async function freezingRelay(target: URL): Promise<{ url: string; freeze(): void; close(): Promise<void> }> {
  const open: net.Socket[] = [];
  const all: net.Socket[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    open.push(client, upstream);
    all.push(client, upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop);
    upstream.on('error', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const url = new URL(target);
  url.host = `127.0.0.1:${port}`;
  return {
    url: url.toString(),
    freeze: () => {
      for (const s of open.splice(0)) {
        s.unpipe();
        s.pause();
      }
    },
    close: async () => {
      for (const s of all) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('the schedule listener', () => {
  const channel = `herald_listen_spec_${randomBytes(4).toString('hex')}`;
  const notifier = new pg.Client({ connectionString: SPEC_DATABASE_URL });
  beforeAll(() => notifier.connect());
  afterAll(() => notifier.end());

  it('replaces a connection that stops answering without closing, looks at the store at once, and hears notifications again', async () => {
    const relay = await freezingRelay(new URL(SPEC_DATABASE_URL));
    const heard: number[] = [];
    const listener = await listenForSchedules({ url: relay.url, schema: 'public', channel, reconnectMs: 50, heartbeatMs: 100, heartbeatTimeoutMs: 200 }, (at) => heard.push(at.getTime()));
    try {
      await notifier.query(`NOTIFY "${channel}", '1000'`);
      await expect.poll(() => heard, { timeout: 2000 }).toContain(1000);
      relay.freeze();
      await notifier.query(`NOTIFY "${channel}", '2000'`);
      // Unheard on the frozen connection; the heartbeat finds it silent, a new one looks at the store (now) ...
      const frozenAt = Date.now();
      await expect.poll(() => heard.filter((t) => t >= frozenAt).length, { timeout: 3000 }).toBeGreaterThan(0);
      expect(heard).not.toContain(2000);
      // ... and listens again.
      await notifier.query(`NOTIFY "${channel}", '3000'`);
      await expect.poll(() => heard, { timeout: 2000 }).toContain(3000);
    } finally {
      await listener.close();
      await relay.close();
    }
  });
});
