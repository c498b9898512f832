import { Agent, get, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Registry, startOpsServer } from './ops-server.ts';

/** Send a raw HTTP/1.1 request (targets fetch would refuse to send) and read the status line. */
const rawStatus = (port: number, requestLine: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`${requestLine}\r\nHost: x\r\nConnection: close\r\n\r\n`));
    let text = '';
    socket.on('data', (d) => (text += d.toString()));
    socket.on('end', () => resolve(text.split('\r\n')[0] ?? ''));
    socket.on('error', reject);
  });

/** An ops server whose `/api/slow` (a dashboard's read) answers after `ms`. */
const slowServer = (ms: number) =>
  startOpsServer({
    port: 0,
    registry: new Registry(),
    healthy: () => true,
    ready: () => ({ ready: true, problems: [] }),
    routes: () => (req: IncomingMessage, res: ServerResponse) => {
      if (req.url !== '/api/slow') return false;
      setTimeout(() => res.end('{}'), ms);
      return true;
    },
  });

describe('the ops server', () => {
  // An exception out of the request listener is uncaught: one request stopped the whole process.
  it("answers 500 for a request its service's routes throw on, tells the service's log, and goes on serving", async () => {
    const told: Array<string | undefined> = [];
    const server = await startOpsServer({
      onRouteError: (_err, url) => void told.push(url),
      port: 0,
      registry: new Registry(),
      healthy: () => true,
      ready: () => ({ ready: true, problems: [] }),
      routes: () => () => {
        throw new TypeError('Invalid URL');
      },
    });
    try {
      expect(await rawStatus(server.port, 'GET //[ HTTP/1.1')).toBe('HTTP/1.1 500 Internal Server Error');
      expect((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(200);
      expect(told).toEqual(['//[']);
    } finally {
      await server.close();
    }
  });

  it('closes promptly while a client polls it on a kept-alive connection: the answers it still gives say Connection: close', async () => {
    // A dashboard's poll that takes a while: one is on its way whenever the close comes.
    const server = await slowServer(50);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const answers: Array<string | undefined> = [];
    let polling = true;
    const poll = (): Promise<void> =>
      new Promise((resolve) => {
        const req = get({ port: server.port, host: '127.0.0.1', path: '/api/slow', agent }, (res) => {
          answers.push(res.headers.connection);
          res.resume().on('end', () => resolve());
        });
        req.on('error', () => ((polling = false), resolve()));
      });
    const poller = (async () => {
      while (polling) {
        await poll();
      }
    })();
    try {
      while (answers.length < 3) await new Promise((r) => setTimeout(r, 10));
      expect(answers).toEqual(['keep-alive', 'keep-alive', 'keep-alive']);
      const started = performance.now();
      await server.close();
      // A poll on its way at the close kept its connection, and the close, open for as long as polls went on.
      expect(performance.now() - started).toBeLessThan(500);
    } finally {
      polling = false;
      await poller;
      agent.destroy();
    }
  });

  it('answers a read under way at the close with Connection: close, and the close ends with it, not at the cut', async () => {
    const server = await slowServer(200);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const answered = new Promise<string | undefined>((resolve, reject) => {
        get({ port: server.port, host: '127.0.0.1', path: '/api/slow', agent }, (res) => res.resume().on('end', () => resolve(res.headers.connection))).on('error', reject);
      });
      await new Promise((r) => setTimeout(r, 50));
      const started = performance.now();
      await server.close();
      expect(await answered).toBe('close');
      expect(performance.now() - started).toBeLessThan(700);
    } finally {
      agent.destroy();
    }
  });
});
