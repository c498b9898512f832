import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { closeConnectionsWhenDraining, closeGracefully, IDLE_CONNECTION_GRACE_MS } from './graceful-close.ts';

describe('closeGracefully', () => {
  let app: FastifyInstance;
  let agent: Agent;

  async function start(): Promise<number> {
    app = Fastify();
    closeConnectionsWhenDraining(app);
    app.get('/', async () => ({ ok: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
    return (app.server.address() as AddressInfo).port;
  }

  const get = (port: number): Promise<{ status: number | undefined; connection: string | undefined; reused: boolean }> =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
        res.resume().on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection, reused: req.reusedSocket }));
      });
      req.on('error', reject).end();
    });

  afterEach(async () => {
    agent?.destroy();
    await app?.close();
  });

  it('serves a request sent on a kept-alive connection idle when the close began, telling it to close, and stops taking new connections', async () => {
    const port = await start();
    expect((await get(port)).connection).toBe('keep-alive');
    const closing = closeGracefully(app, 5_000);
    await new Promise((r) => setTimeout(r, 50));
    // The pooled connection, idle when the close began, carries the next request: it is answered.
    expect(await get(port)).toEqual({ status: 200, connection: 'close', reused: true });
    // Its connection closed, the client's next one is refused: the API no longer listens.
    await expect(get(port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    const started = performance.now();
    expect(await closing).toBe('closed');
    expect(performance.now() - started).toBeLessThan(IDLE_CONNECTION_GRACE_MS / 2);
  });

  it('closes a connection still idle after the grace, and the close ends then', async () => {
    const port = await start();
    await get(port);
    const started = performance.now();
    expect(await closeGracefully(app, 5_000)).toBe('closed');
    const tookMs = performance.now() - started;
    expect(tookMs).toBeGreaterThanOrEqual(IDLE_CONNECTION_GRACE_MS - 50);
    expect(tookMs).toBeLessThan(IDLE_CONNECTION_GRACE_MS + 500);
  });

  it('ends at once with no connection open, and keeps the grace to a third of a short bound', async () => {
    await start();
    let started = performance.now();
    expect(await closeGracefully(app, 5_000)).toBe('closed');
    expect(performance.now() - started).toBeLessThan(200);
    agent.destroy();

    const port = await start();
    await get(port);
    started = performance.now();
    expect(await closeGracefully(app, 600)).toBe('closed');
    expect(performance.now() - started).toBeLessThan(450);
  });
});
