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
});
