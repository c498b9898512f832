import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { openTunnel } from './proxy-tunnel.ts';
import type { WebPushSettings } from './web-settings.ts';

const DEFAULT_MAX_SOCKETS = 64;

/**
 * The keep-alive HTTPS agent the Web Push provider sends with: one pool of TLS connections per
 * push-service origin (web-push's own sendNotification would open one per request), the sandbox's
 * CA for the sandbox's origin only, and an optional HTTP CONNECT egress proxy.
 */
export class WebPushAgent extends https.Agent {
  constructor(private readonly settings: Pick<WebPushSettings, 'trusted' | 'proxy' | 'maxSockets'>) {
    super({ keepAlive: true, maxSockets: settings.maxSockets ?? DEFAULT_MAX_SOCKETS, scheduling: 'lifo' });
  }

  /** The CA bundle for host:port when it is a trusted origin, else undefined (Node's roots). */
  private caFor(host: string | undefined, port: number | undefined): string | undefined {
    return this.settings.trusted?.find((t) => t.host === host && t.port === (port ?? 443))?.ca;
  }

  override createConnection(opts: tls.ConnectionOptions, callback?: (err: Error | null, socket: Duplex) => void): Socket | undefined {
    const ca = this.caFor(opts.host ?? undefined, opts.port === undefined || opts.port === null ? undefined : Number(opts.port));
    const target: tls.ConnectionOptions = ca === undefined ? opts : { ...opts, ca };
    const proxy = this.settings.proxy;
    if (proxy === undefined || callback === undefined) return tls.connect(target);
    openTunnel(proxy, target.host ?? 'localhost', Number(target.port ?? 443)).then(
      (socket) => callback(null, tls.connect({ ...target, socket })),
      (err: Error) => callback(err, undefined as unknown as Duplex),
    );
    return undefined;
  }
}
