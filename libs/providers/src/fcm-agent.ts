import type { ClientRequest } from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { openTunnel } from './proxy-tunnel.ts';
import type { ProxySettings } from './settings.ts';

export interface FcmAgentOptions {
  /** Connect here instead of the host firebase-admin asks for (fcm.googleapis.com:443). */
  endpoint?: { host: string; port: number; ca?: string };
  /** Reach the (possibly redirected) host through this HTTP CONNECT proxy. */
  proxy?: ProxySettings;
  maxSockets: number;
}

const DEFAULT_TARGET = { host: 'fcm.googleapis.com', port: 443 };

/** TLS options for the endpoint instead of the host firebase-admin asked for. */
function redirected(opts: tls.ConnectionOptions, endpoint: NonNullable<FcmAgentOptions['endpoint']>, context: tls.SecureContext | undefined): tls.ConnectionOptions {
  // Drop the servername (SNI) https.Agent derived from fcm.googleapis.com; verify against the endpoint instead.
  const rest: tls.ConnectionOptions = { ...opts };
  delete rest.servername;
  // The endpoint's CA as one secure context for every connection (not its PEM parsed again per socket).
  if (context !== undefined) delete rest.ca;
  return {
    ...rest,
    host: endpoint.host,
    port: endpoint.port,
    ...(isIP(endpoint.host) === 0 ? { servername: endpoint.host } : {}),
    ...(context !== undefined ? { secureContext: context } : {}),
  };
}

/**
 * The keep-alive https.Agent firebase-admin's HTTP client sends FCM requests with: it can redirect
 * connections to the sandbox (or a relay) and tunnel them through an egress proxy. Each send
 * passes its own view of it (forSend), which hands the request to the send so its deadline can
 * cut it. Serves as a service account's token agent through a proxy too.
 */
export class FcmAgent extends https.Agent {
  private readonly context: tls.SecureContext | undefined;

  constructor(private readonly settings: FcmAgentOptions) {
    super({ keepAlive: true, maxSockets: settings.maxSockets, ...(settings.endpoint?.ca !== undefined ? { ca: settings.endpoint.ca } : {}) });
    this.context = settings.endpoint?.ca !== undefined ? tls.createSecureContext({ ca: settings.endpoint.ca }) : undefined;
  }

  /**
   * Without a proxy: TLS to the endpoint at once. With one: open the CONNECT tunnel, then TLS over
   * it, handing the socket to https.Agent through `callback` (its asynchronous form).
   */
  override createConnection(opts: tls.ConnectionOptions, callback?: (err: Error | null, socket: Duplex) => void): Socket | undefined {
    const endpoint = this.settings.endpoint;
    const target = endpoint === undefined ? opts : redirected(opts, endpoint, this.context);
    const proxy = this.settings.proxy;
    if (proxy === undefined || callback === undefined) return tls.connect(target);
    openTunnel(proxy, target.host ?? DEFAULT_TARGET.host, target.port ?? DEFAULT_TARGET.port).then(
      (socket) => callback(null, tls.connect({ ...target, socket })),
      (err: Error) => callback(err, undefined as unknown as Duplex),
    );
    return undefined;
  }

  /**
   * A view of this agent for one request: the same pools and sockets, plus `onRequest` called
   * with the request when it is made (no AsyncLocalStorage: in Node 20 that turns on promise
   * hooks for every promise in the process).
   */
  forSend(onRequest: (req: ClientRequest) => void): https.Agent {
    const view = Object.create(this) as https.Agent & { addRequest(req: ClientRequest, opts: object): void };
    view.addRequest = (req: ClientRequest, opts: object): void => {
      onRequest(req);
      (https.Agent.prototype as unknown as { addRequest(r: ClientRequest, o: object): void }).addRequest.call(this, req, opts);
    };
    return view;
  }
}

/** Retry-After as milliseconds: delay-seconds or an HTTP date. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
