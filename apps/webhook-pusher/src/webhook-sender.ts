import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { internalAddressProblem } from '@herald/contracts';

/** What became of one POST, as a value (the handler turns it into ack / retry / park). */
export type WebhookResult =
  | { kind: 'delivered'; status: number }
  /** 5xx, 429, 408, timeouts, connection errors: retried with back-off. */
  | { kind: 'transient'; reason: string; status?: number; retryAfterMs?: number }
  /** Other 4xx, redirects (never followed): parked at once. */
  | { kind: 'permanent'; reason: string; status?: number };

export interface WebhookSenderOptions {
  /** The whole request: connect, send, answer and the (capped) body. */
  timeoutMs: number;
  /** Most bytes of an answer body read; the rest is cut off and the connection closed. */
  bodyLimitBytes: number;
  userAgent?: string;
  /** WEBHOOK_ALLOW_HTTP_LOCALHOST: the loopback may be reached (development, tests). */
  allowLoopback?: boolean;
}

/** A callback host that resolved to an address a webhook must not reach: parked, never retried. */
class RefusedAddressError extends Error {
  readonly code = 'EHERALD_REFUSED_ADDRESS';
}

/**
 * dns.lookup, refusing a host any of whose addresses is internal (callback-url.ts): checked here,
 * on the addresses the connection will use, so a name pointing inside (an internal service name,
 * 10.0.0.5.nip.io, a DNS rebinding between subscribing and sending) cannot reach it.
 */
export function guardedLookup(allowLoopback: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) return callback(err, '', 0);
      const refused = addresses.map((a) => ({ a, why: internalAddressProblem(a.address, allowLoopback) })).find((r) => r.why !== undefined);
      if (refused !== undefined) return callback(new RefusedAddressError(`${hostname} resolves to ${refused.why}`), '', 0);
      const [first] = addresses;
      if (options.all === true) return (callback as unknown as (e: null, all: dns.LookupAddress[]) => void)(null, addresses);
      return callback(null, first?.address ?? '', first?.family ?? 4);
    });
  };
}

export interface WebhookSender {
  post(url: string, body: Buffer, headers: Record<string, string>): Promise<WebhookResult>;
  close(): void;
}

const REASON_SNIPPET = 200;

/**
 * POSTs over node:http/https with keep-alive: one request, no redirects followed, a hard deadline,
 * and at most bodyLimitBytes of the answer read, so a receiver can neither hang the pusher nor make
 * it buffer a huge body.
 */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const lookup = guardedLookup(options.allowLoopback === true);
  const agents = { http: new http.Agent({ keepAlive: true, lookup }), https: new https.Agent({ keepAlive: true, lookup }) };
  return {
    post: (url, body, headers) => post(url, body, headers, options, agents),
    close: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

function post(
  url: string,
  body: Buffer,
  headers: Record<string, string>,
  options: WebhookSenderOptions,
  agents: { http: http.Agent; https: https.Agent },
): Promise<WebhookResult> {
  return new Promise((resolve) => {
    let settled = false;
    let status: number | undefined;
    let location: string | undefined;
    let retryAfter: string | undefined;
    const kept: Buffer[] = [];
    let keptBytes = 0;
    const finish = (result: WebhookResult | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result ?? classify(status ?? 0, Buffer.concat(kept).toString('utf8'), location, retryAfter));
    };
    // A literal IP is not looked up (the lookup above never sees it): asked here.
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    const literal = isIP(host) === 0 ? undefined : internalAddressProblem(host, options.allowLoopback === true);
    if (literal !== undefined) return resolve(refusedAddress(`${host} is ${literal}`));
    const isHttps = url.startsWith('https:');
    const req = (isHttps ? https : http).request(url, {
      method: 'POST',
      agent: isHttps ? agents.https : agents.http,
      headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'user-agent': options.userAgent ?? 'Herald-Webhooks/1', ...headers },
    });
    const timer = setTimeout(() => {
      // With an answer's status already in, the status decides (its body was merely slow).
      finish(status === undefined ? { kind: 'transient', reason: `timed out after ${options.timeoutMs} ms` } : undefined);
      req.destroy();
    }, options.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) =>
      finish(err instanceof RefusedAddressError ? refusedAddress(err.message) : { kind: 'transient', reason: `connection failed: ${err.code ?? err.message}` }),
    );
    req.on('response', (res) => {
      status = res.statusCode ?? 0;
      location = typeof res.headers.location === 'string' ? res.headers.location : undefined;
      retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined;
      res.on('data', (chunk: Buffer) => {
        const room = options.bodyLimitBytes - keptBytes;
        if (room > 0) kept.push(chunk.subarray(0, room));
        keptBytes += chunk.length;
        if (keptBytes > options.bodyLimitBytes) {
          // Cut off: the rest is never read; destroying drops the connection instead of pooling it.
          finish(undefined);
          res.destroy();
        }
      });
      res.on('end', () => finish(undefined));
      res.on('close', () => finish(undefined));
      res.on('error', () => finish(undefined));
    });
    req.end(body);
  });
}

const refusedAddress = (what: string): WebhookResult => ({
  kind: 'permanent',
  reason: `refused: the callback's host ${what}, which webhooks must not reach (subscribe a public https URL)`,
});

/** An HTTP answer's meaning for a webhook delivery. */
export function classify(status: number, bodyStart: string, location?: string, retryAfter?: string): WebhookResult {
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  const snippet = bodyStart.slice(0, REASON_SNIPPET).replace(/\s+/g, ' ').trim();
  const said = snippet.length > 0 ? `: ${snippet}` : '';
  if (status >= 300 && status < 400) {
    return { kind: 'permanent', status, reason: `HTTP ${status} redirect${location !== undefined ? ` to ${location}` : ''} not followed (subscribe the final URL)` };
  }
  if (status === 429 || status === 408 || status >= 500) {
    const retryAfterMs = retryAfterMsOf(retryAfter);
    return { kind: 'transient', status, reason: `HTTP ${status}${said}`, ...(retryAfterMs !== undefined && { retryAfterMs }) };
  }
  return { kind: 'permanent', status, reason: `HTTP ${status}${said}` };
}

/** Retry-After as seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMsOf(raw: string | undefined, now = Date.now()): number | undefined {
  if (raw === undefined) return undefined;
  if (/^\d+$/.test(raw.trim())) return Number(raw.trim()) * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
