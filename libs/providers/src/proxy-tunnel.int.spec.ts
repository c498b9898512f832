import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTunnel, ProxyTunnelError } from './proxy-tunnel.ts';

/** A "proxy" on 127.0.0.1 that accepts connections and never answers. */
let silent: Server;
const sockets: Socket[] = [];
beforeAll(async () => {
  silent = createServer((s) => void sockets.push(s));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
});

describe('openTunnel', () => {
  it('fails a proxy that accepts the connection but never answers CONNECT, after the timeout', async () => {
    const port = (silent.address() as { port: number }).port;
    const started = Date.now();
    const opening = openTunnel({ host: '127.0.0.1', port }, 'api.push.apple.com', 443, 300);
    await expect(opening).rejects.toThrow(ProxyTunnelError);
    await expect(opening).rejects.toThrow(/did not answer CONNECT api.push.apple.com:443 within 300 ms/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });
});
