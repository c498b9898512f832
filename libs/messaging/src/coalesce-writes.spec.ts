import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { coalesceWrites } from './coalesce-writes.ts';

const cleanups: Array<() => void> = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

/** A loopback socket pair: what the client writes arrives at `received`, chunk by chunk. */
async function socketPair(): Promise<{ client: Socket; received: Buffer[] }> {
  const received: Buffer[] = [];
  const server = createServer((peer) => peer.on('data', (chunk: Buffer) => received.push(chunk)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', noDelay: true });
  await once(client, 'connect');
  cleanups.push(() => {
    client.destroy();
    server.close();
  });
  return { client, received };
}

describe('coalesceWrites', () => {
  it('holds the writes of one tick and sends them together when the tick ends, in order', async () => {
    const { client, received } = await socketPair();
    coalesceWrites({ connection: { stream: client } });
    coalesceWrites({ connection: { stream: client } }); // a second channel on the same socket: patched once
    const frames = ['one|', 'two|', 'three|'];
    for (const f of frames) client.write(f);
    expect(client.writableCorked).toBe(1);
    expect(client.writableLength).toBe(frames.join('').length);
    await new Promise((resolve) => process.nextTick(resolve));
    expect(client.writableCorked).toBe(0);
    while (Buffer.concat(received).length < frames.join('').length) await new Promise((r) => setTimeout(r, 5));
    expect(Buffer.concat(received).toString()).toBe(frames.join(''));
  });

  it('leaves anything that is not an amqplib channel on a socket alone', () => {
    expect(() => coalesceWrites(undefined)).not.toThrow();
    expect(() => coalesceWrites({ connection: { stream: {} } })).not.toThrow();
  });
});
