import https from 'node:https';
import type { BlockList, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { openTunnel } from './proxy-tunnel.ts';
import { allowedRanges, literalRefusal, publicAddressLookup } from './web-address.ts';
import type { WebPushSettings } from './web-settings.ts';

const DEFAULT_MAX_SOCKETS = 64;

type Connected = (err: Error | null, socket: Duplex) => void;

/**
 * The keep-alive HTTPS agent the Web Push provider sends with: one pool of TLS connections per
 * push-service origin (web-push's own sendNotification would open one per request), the sandbox's
 * CA for the sandbox's origin only, and an optional HTTP CONNECT egress proxy.
 *
 * It connects only to public addresses (web-address.ts), checking the address it connects to
 * (a `lookup` that filters what the name resolves to), however the endpoint's host got past the
 * app's allow-list: a trusted origin (the sandbox, on 127.0.0.1) and the ranges the operator
 * allowed (`privateAddresses`) aside. Through a proxy the proxy resolves names, so only an IP
 * address in the endpoint itself is checked here; the proxy's own rules must keep the rest out.
 */
export class WebPushAgent extends https.Agent {
  private readonly allowed: BlockList | undefined;
  private readonly lookup: ReturnType<typeof publicAddressLookup>;

  constructor(private readonly settings: Pick<WebPushSettings, 'trusted' | 'proxy' | 'maxSockets' | 'privateAddresses'>) {
    super({ keepAlive: true, maxSockets: settings.maxSockets ?? DEFAULT_MAX_SOCKETS, scheduling: 'lifo' });
    this.allowed = allowedRanges(settings.privateAddresses);
    this.lookup = publicAddressLookup(this.allowed);
  }

  /** The trusted origin at host:port (the sandbox's, with its CA bundle), if it is one. */
  private trustedAt(host: string | undefined, port: number | undefined): { ca: string } | undefined {
    return this.settings.trusted?.find((t) => t.host === host && t.port === (port ?? 443));
  }

  override createConnection(opts: tls.ConnectionOptions, callback?: Connected): Socket | undefined {
    const host = opts.host ?? 'localhost';
    const trusted = this.trustedAt(opts.host ?? undefined, opts.port === undefined || opts.port === null ? undefined : Number(opts.port));
    const refused = trusted === undefined ? literalRefusal(host, this.allowed) : undefined;
    if (refused !== undefined) return this.fail(refused, callback);
    const target: tls.ConnectionOptions = trusted === undefined ? { ...opts, lookup: this.lookup } : { ...opts, ca: trusted.ca };
    const proxy = this.settings.proxy;
    if (proxy === undefined || callback === undefined) return tls.connect(target);
    openTunnel(proxy, host, Number(target.port ?? 443)).then(
      (socket) => callback(null, tls.connect({ ...target, socket })),
      (err: Error) => callback(err, undefined as unknown as Duplex),
    );
    return undefined;
  }

  /** No connection: the request fails with `err` (as a transport error would, so the provider tells it apart by its class). */
  private fail(err: Error, callback: Connected | undefined): undefined {
    if (callback === undefined) throw err;
    process.nextTick(() => callback(err, undefined as unknown as Duplex));
    return undefined;
  }
}
