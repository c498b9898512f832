import { connect } from 'node:net';
import { Registry, startOpsServer } from '@herald/runtime';
import { describe, expect, it } from 'vitest';
import { dashboardRoutes, type DashboardDeps } from './dashboard-routes.ts';

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
});
