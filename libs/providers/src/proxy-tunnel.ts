import { request, type IncomingMessage } from 'node:http';
import { isIPv6, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import tls, { type ConnectionOptions, type TLSSocket } from 'node:tls';
import type { ProxySettings } from './settings.ts';

/** The proxy could not be reached or refused the tunnel (a transport failure: the send is retried). */
export class ProxyTunnelError extends Error {
  override readonly name = 'ProxyTunnelError';
}

const authority = (host: string, port: number): string => `${isIPv6(host) ? `[${host}]` : host}:${port}`;

function proxyAuthorization(proxy: ProxySettings): Record<string, string> {
  if (proxy.username === undefined) return {};
  const basic = Buffer.from(`${proxy.username}:${proxy.password ?? ''}`, 'utf8').toString('base64');
  return { 'proxy-authorization': `Basic ${basic}` };
}

/**
 * Ask the proxy for a tunnel to host:port (HTTP CONNECT, with Proxy-Authorization when the proxy
 * has a user) and resolve with the raw socket once it answered 2xx. The caller speaks TLS over it.
 * A proxy that accepts the connection but does not answer within `timeoutMs` fails the tunnel (a
 * timer, not a socket timeout, which would stay on the tunnel's socket afterwards).
 */
export const PROXY_CONNECT_TIMEOUT_MS = 10_000;

export function openTunnel(proxy: ProxySettings, host: string, port: number, timeoutMs = PROXY_CONNECT_TIMEOUT_MS): Promise<Socket> {
  const target = authority(host, port);
  const via = authority(proxy.host, proxy.port);
  return new Promise((resolve, reject) => {
    const req = request({ host: proxy.host, port: proxy.port, method: 'CONNECT', path: target, agent: false, headers: { host: target, ...proxyAuthorization(proxy) } });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new ProxyTunnelError(`proxy ${via} did not answer CONNECT ${target} within ${timeoutMs} ms`));
    }, timeoutMs);
    req.once('close', () => clearTimeout(timer));
    req.once('connect', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      clearTimeout(timer);
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 299) {
        socket.destroy();
        reject(new ProxyTunnelError(`proxy ${via} refused CONNECT ${target}: HTTP ${status} ${res.statusMessage ?? ''}`.trim()));
        return;
      }
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    req.once('error', (err) => reject(new ProxyTunnelError(`proxy ${via} for ${target}: ${err.message}`)));
    req.end();
  });
}

/**
 * A stream that is the tunnel once `open` resolved: for connection hooks that must return a stream
 * at once (http2's createConnection). Writes wait until the tunnel is up; a failed tunnel
 * destroys the stream with the proxy's error.
 */
export function pendingTunnel(open: () => Promise<Socket>): Duplex {
  let socket: Socket | undefined;
  const stream: Duplex = new Duplex({
    construct(callback) {
      open().then((s) => {
        socket = s;
        s.on('data', (chunk: Buffer) => stream.push(chunk) || s.pause());
        s.once('end', () => stream.push(null));
        s.once('error', (err) => stream.destroy(err));
        s.once('close', () => stream.destroy());
        callback();
      }, callback);
    },
    read: () => void socket?.resume(),
    write: (chunk: Buffer, encoding, callback) => void socket?.write(chunk, encoding, callback),
    final: (callback) => void socket?.end(callback),
    destroy(err, callback) {
      socket?.destroy();
      callback(err);
    },
  });
  return stream;
}

/**
 * TLS to host:port through a CONNECT tunnel of `proxy`, returned at once (http2's
 * createConnection): `options` carry what the TLS needs (ALPN, CA, client certificate, names).
 * Each call opens a tunnel of its own.
 */
export function tunnelledTls(proxy: ProxySettings, host: string, port: number, options: ConnectionOptions): TLSSocket {
  return tls.connect({ ...options, socket: pendingTunnel(() => openTunnel(proxy, host, port)) });
}
