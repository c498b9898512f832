import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a server (RabbitMQ, say) that a test can make stop answering: while
 * frozen, what the server sends is held back from every client, as from a broker that blocks or
 * hangs, while what clients send still reaches it.
 */
export interface TcpProxy {
  readonly port: number;
  /** The URL with its host and port replaced by the proxy's. */
  urlFor(url: string): string;
  freeze(): void;
  /**
   * The connections open now stop answering for good, as to a host lost without a word (a power
   * cut, a partition); connections made after it are served as before, as by the host that took over.
   */
  stall(): void;
  /** Hands over what the server sent while frozen, and everything after. */
  thaw(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let frozen = false;
  const pairs = new Set<{ client: Socket; server: Socket }>();
  /** Connections stall() silenced: never thawed, closed with the proxy. */
  const stalled = new Set<{ client: Socket; server: Socket }>();
  const proxy = createServer((client) => {
    const server = createConnection({ host: targetHost, port: targetPort });
    const pair = { client, server };
    pairs.add(pair);
    client.pipe(server);
    if (!frozen) server.pipe(client);
    const end = (): void => {
      pairs.delete(pair);
      stalled.delete(pair);
      client.destroy();
      server.destroy();
    };
    client.on('error', end).on('close', end);
    server.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as AddressInfo).port;
  return {
    port,
    urlFor: (url) => {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    freeze: () => {
      frozen = true;
      for (const { client, server } of pairs) {
        server.unpipe(client);
        server.pause();
      }
    },
    stall: () => {
      for (const pair of pairs) {
        // Neither way: a statement sent now never reaches the server, as to a host that is gone.
        pair.server.unpipe(pair.client);
        pair.server.pause();
        pair.client.unpipe(pair.server);
        pair.client.pause();
        pairs.delete(pair);
        stalled.add(pair);
      }
    },
    thaw: () => {
      frozen = false;
      for (const { client, server } of pairs) server.pipe(client);
    },
    close: async () => {
      for (const { client, server } of [...pairs, ...stalled]) {
        client.destroy();
        server.destroy();
      }
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'amqp:': 5672, 'postgres:': 5432, 'postgresql:': 5432 };

/** A TcpProxy in front of the server a RabbitMQ or PostgreSQL URL names (its port, or the scheme's). */
export function startTcpProxyFor(url: string): Promise<TcpProxy> {
  const target = new URL(url);
  const port = target.port === '' ? DEFAULT_PORTS[target.protocol] : Number(target.port);
  if (port === undefined) throw new Error(`no port in ${target.protocol}//${target.host} and no default for ${target.protocol}`);
  return startTcpProxy(target.hostname, port);
}
