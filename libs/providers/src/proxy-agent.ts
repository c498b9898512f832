import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { openTunnel } from './proxy-tunnel.ts';
import type { ProxySettings } from './settings.ts';

/**
 * The keep-alive https.Agent a service account's credential fetches its OAuth tokens with, through
 * the egress proxy: each connection opens a CONNECT tunnel, then TLS over it, handed to
 * https.Agent through `callback` (its asynchronous form).
 */
export class ProxyAgent extends https.Agent {
  constructor(private readonly proxy: ProxySettings) {
    super({ keepAlive: true, maxSockets: 2 });
  }

  override createConnection(opts: tls.ConnectionOptions, callback?: (err: Error | null, socket: Duplex) => void): Socket | undefined {
    if (callback === undefined) throw new Error('ProxyAgent connects asynchronously (through a tunnel) only');
    openTunnel(this.proxy, opts.host ?? 'oauth2.googleapis.com', opts.port ?? 443).then(
      (socket) => callback(null, tls.connect({ ...opts, socket })),
      (err: Error) => callback(err, undefined as unknown as Duplex),
    );
    return undefined;
  }
}
