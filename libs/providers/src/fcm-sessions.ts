import http2 from 'node:http2';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { useEndOfLifeAsyncBind } from './async-bind.ts';
import { settledWithin } from './warm-up.ts';
import { tunnelledTls } from './proxy-tunnel.ts';
import type { ProxySettings } from './settings.ts';

export interface FcmSessionOptions {
  /** Connect here instead of fcm.googleapis.com:443 (the sandbox, a relay), trusting `ca` there. */
  endpoint?: { host: string; port: number; ca?: string };
  /** Reach the (possibly redirected) host through this HTTP CONNECT proxy, one tunnel per session. */
  proxy?: ProxySettings;
  /** Most HTTP/2 sessions kept open; a further one opens only when every open one is at its stream limit. */
  maxSessions: number;
}

/** What FCM answered one request. */
export interface FcmResponse {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: string;
}

/** The request was cut at its deadline (its stream cancelled, so the server sees the client go). */
export class FcmTimeoutError extends Error {
  override readonly name = 'FcmTimeoutError';
}

const DEFAULT_TARGET = { host: 'fcm.googleapis.com', port: 443 };
/** Streams a session carries before the server's SETTINGS say how many it allows (Google's front ends allow 100). */
const STREAMS_BEFORE_SETTINGS = 100;

interface Pooled {
  session: http2.ClientHttp2Session;
  active: number;
  settled: boolean;
}

/**
 * FCM's HTTP v1 API over HTTP/2, as Google's own Admin SDK sends it (sendEach): many requests
 * multiplexed on few TLS connections, so a send costs a stream, not a socket with its own TLS
 * records. Sessions open lazily, fill up to the server's SETTINGS_MAX_CONCURRENT_STREAMS, and
 * leave the pool when they close, error or receive GOAWAY (their open streams finish or fail on
 * their own; the next request opens a new session).
 */
export class FcmSessions {
  private readonly pool: Pooled[] = [];
  private readonly target: { host: string; port: number };
  private readonly tlsOptions: tls.ConnectionOptions;
  private closed = false;

  constructor(private readonly options: FcmSessionOptions) {
    // Every send is one http2 request(): see async-bind.ts.
    useEndOfLifeAsyncBind();
    this.target = options.endpoint ?? DEFAULT_TARGET;
    const { host } = this.target;
    const ca = options.endpoint?.ca;
    this.tlsOptions = {
      host,
      // The certificate is checked against the host; SNI only for a name.
      ...(isIP(host) === 0 && { servername: host }),
      ALPNProtocols: ['h2'],
      // The endpoint's CA as one secure context for every session (not its PEM parsed per connection).
      ...(ca !== undefined && { secureContext: tls.createSecureContext({ ca }) }),
    };
  }

  /** POST `body` to `path`; resolves with FCM's answer, rejects on a transport failure or FcmTimeoutError. */
  post(path: string, headers: http2.OutgoingHttpHeaders, body: string, timeoutMs: number): Promise<FcmResponse> {
    if (this.closed) return Promise.reject(new Error('the FCM sessions are closed'));
    const pooled = this.pick();
    pooled.active++;
    return new Promise<FcmResponse>((resolve, reject) => {
      let done = false;
      const finish = (): boolean => {
        if (done) return false;
        done = true;
        pooled.active--;
        clearTimeout(timer);
        return true;
      };
      let stream: http2.ClientHttp2Stream;
      try {
        stream = pooled.session.request({ ':method': 'POST', ':path': path, ...headers });
      } catch (err) {
        pooled.active--;
        reject(err as Error);
        return;
      }
      const timer = setTimeout(() => {
        if (!finish()) return;
        stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(new FcmTimeoutError(`no answer from FCM within ${timeoutMs} ms`));
      }, timeoutMs);
      let status = 0;
      let responseHeaders: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on('response', (h) => {
        status = Number(h[':status']);
        responseHeaders = h;
      });
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (finish()) resolve({ status, headers: responseHeaders, body: Buffer.concat(chunks).toString('utf8') });
      });
      stream.on('error', (err) => {
        if (finish()) reject(err);
      });
      // A stream closed without an answer or an error (the server reset it with NO_ERROR, say).
      stream.on('close', () => {
        if (finish()) reject(new Error(`FCM closed the stream without an answer (HTTP/2 code ${stream.rstCode ?? 'none'})`));
      });
      stream.end(body);
    });
  }

  /** Close every session; requests still open fail. */
  close(): void {
    this.closed = true;
    for (const { session } of this.pool.splice(0)) session.destroy();
  }

  /** The first open session with a free stream, else a new session while under `maxSessions`, else the least busy (nghttp2 queues the stream). */
  private pick(): Pooled {
    let leastBusy: Pooled | undefined;
    for (const p of this.pool) {
      if (p.session.closed || p.session.destroyed) continue;
      const limit = p.settled ? (p.session.remoteSettings.maxConcurrentStreams ?? STREAMS_BEFORE_SETTINGS) : STREAMS_BEFORE_SETTINGS;
      if (p.active < limit) return p;
      if (leastBusy === undefined || p.active < leastBusy.active) leastBusy = p;
    }
    if (leastBusy === undefined || this.pool.length < this.options.maxSessions) return this.connect();
    return leastBusy;
  }

  /**
   * Opens a session now, if none is open, and waits (at most `timeoutMs`) until it is connected
   * or has failed; a failure is left for the first send to report. The pusher makes its provider
   * before it takes rate budget, so budget is not held while the first connection opens.
   */
  async warm(timeoutMs: number): Promise<void> {
    if (this.closed || this.pool.length > 0) return;
    await settledWithin(this.connect().session, timeoutMs);
  }

  private connect(): Pooled {
    const { host, port } = this.target;
    const proxy = this.options.proxy;
    const authority = `https://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
    const session = http2.connect(authority, {
      ...this.tlsOptions,
      ...(proxy !== undefined && {
        createConnection: () => tunnelledTls(proxy, host, port, this.tlsOptions),
      }),
    });
    const pooled: Pooled = { session, active: 0, settled: false };
    const leave = (): void => {
      const at = this.pool.indexOf(pooled);
      if (at !== -1) this.pool.splice(at, 1);
    };
    session.once('remoteSettings', () => (pooled.settled = true));
    session.once('goaway', leave);
    session.once('close', leave);
    // The error reaches the session's streams (their requests fail as transport errors); the session only leaves the pool.
    session.on('error', leave);
    this.pool.push(pooled);
    return pooled;
  }
}

