import { AsyncLocalStorage } from 'node:async_hooks';
import type { ClientRequest, IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { openTunnel } from './proxy-tunnel.ts';
import type { ProxySettings } from './settings.ts';

/** What one `send` saw on the wire; filled by the agent while the send's async context is active. */
export interface FcmAttempt {
  requests: number;
  request?: ClientRequest;
  status?: number;
  retryAfter?: string;
  /** Set when the deadline passed: the request was destroyed and no other may start. */
  cancelled?: Error;
  /** Called on an answer firebase-admin would retry after a wait (503), so the send can return at once. */
  onRetryable?: () => void;
}

/** The statuses firebase-admin's HttpClient retries by itself (defaultRetryConfig). */
const SDK_RETRIED_STATUS = new Set([503]);

export const NO_RETRY_CODE = 'EHERALD_NO_RETRY';

export interface FcmAgentOptions {
  /** Connect here instead of the host firebase-admin asks for (fcm.googleapis.com:443). */
  endpoint?: { host: string; port: number; ca?: string };
  /** Reach the (possibly redirected) host through this HTTP CONNECT proxy. */
  proxy?: ProxySettings;
  maxSockets: number;
}

const DEFAULT_TARGET = { host: 'fcm.googleapis.com', port: 443 };

/** TLS options for the endpoint instead of the host firebase-admin asked for. */
function redirected(opts: tls.ConnectionOptions, endpoint: NonNullable<FcmAgentOptions['endpoint']>): tls.ConnectionOptions {
  // Drop the servername (SNI) https.Agent derived from fcm.googleapis.com; verify against the endpoint instead.
  const rest: tls.ConnectionOptions = { ...opts };
  delete rest.servername;
  return {
    ...rest,
    host: endpoint.host,
    port: endpoint.port,
    ...(isIP(endpoint.host) === 0 ? { servername: endpoint.host } : {}),
    ...(endpoint.ca !== undefined ? { ca: endpoint.ca } : {}),
  };
}

const noRetry = (): Error => Object.assign(new Error('one attempt per send: Herald retries through its queues'), { code: NO_RETRY_CODE });

/**
 * The https.Agent firebase-admin is given through AppOptions.httpAgent (messaging.send uses
 * https.request with it). It can redirect connections to the sandbox and tunnel them through an
 * egress proxy, and per `send` (tracked with AsyncLocalStorage) it records the HTTP status and
 * Retry-After that firebase-admin's errors drop, and it stops the SDK's own retries so a send is
 * a single attempt.
 */
export class FcmAgent extends https.Agent {
  readonly attempts = new AsyncLocalStorage<FcmAttempt>();

  constructor(private readonly settings: FcmAgentOptions) {
    super({ keepAlive: true, maxSockets: settings.maxSockets, ...(settings.endpoint?.ca !== undefined ? { ca: settings.endpoint.ca } : {}) });
  }

  /**
   * Without a proxy: TLS to the endpoint at once. With one: open the CONNECT tunnel, then TLS over
   * it, handing the socket to https.Agent through `callback` (its asynchronous form).
   */
  override createConnection(opts: tls.ConnectionOptions, callback?: (err: Error | null, socket: Duplex) => void): Socket | undefined {
    const endpoint = this.settings.endpoint;
    const target = endpoint === undefined ? opts : redirected(opts, endpoint);
    const proxy = this.settings.proxy;
    if (proxy === undefined || callback === undefined) return tls.connect(target);
    openTunnel(proxy, target.host ?? DEFAULT_TARGET.host, target.port ?? DEFAULT_TARGET.port).then(
      (socket) => callback(null, tls.connect({ ...target, socket })),
      (err: Error) => callback(err, undefined as unknown as Duplex),
    );
    return undefined;
  }

  /** Called by http.ClientRequest for every request that uses this agent. */
  addRequest(req: ClientRequest, opts: object): void {
    const attempt = this.attempts.getStore();
    if (attempt !== undefined) {
      attempt.requests += 1;
      if (attempt.cancelled !== undefined || attempt.requests > 1) {
        req.destroy(attempt.cancelled ?? noRetry());
        return;
      }
      attempt.request = req;
      req.once('response', (res: IncomingMessage) => {
        attempt.status = res.statusCode;
        const retryAfter = res.headers['retry-after'];
        if (retryAfter !== undefined) attempt.retryAfter = retryAfter;
        if (res.statusCode !== undefined && SDK_RETRIED_STATUS.has(res.statusCode)) attempt.onRetryable?.();
      });
    }
    (https.Agent.prototype as unknown as { addRequest(r: ClientRequest, o: object): void }).addRequest.call(this, req, opts);
  }
}

/** Retry-After as milliseconds: delay-seconds or an HTTP date. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
