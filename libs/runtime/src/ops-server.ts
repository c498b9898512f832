import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Registry } from 'prom-client';

/** How long a closing ops server lets the answers it is writing finish before it cuts their connections. */
const OPS_CLOSE_GRACE_MS = 1_000;

export { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** A registry with process metrics (CPU, memory, event-loop lag) already collected. */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  // Event-loop lag sampled every 100 ms, not prom-client's default 10: each sample wakes the
  // process, and at 100 a second that cost a bare Node process 4.3 ms of CPU a second against 0.6
  // (process.cpuUsage over 20 s). Herald's fourteen services at rest under `npm start` spent
  // 85 ms a second in all before, 51–54 after (/proc, 30 s, twice each); under load that is CPU
  // every delivered push paid for. Lag percentiles still come from ten samples a second.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  return registry;
}

/** Extra routes a service serves beside /metrics, /healthz and /readyz; returns false for a URL it does not serve. */
export type HttpRoutes = (req: IncomingMessage, res: ServerResponse) => boolean;

/** Whether a process can do its work now, and if not, why (one line each). */
export interface Readiness {
  ready: boolean;
  problems: readonly string[];
}

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Whether a service's own routes took the request. One that throws is answered 500 rather than
 * left to crash the process: an exception out of the server's request listener is uncaught, and a
 * single request with a target Node's parser takes but URL does not (`GET //[`) stopped the
 * monitor, its alarms with it.
 */
function routed(routes: HttpRoutes | undefined, req: IncomingMessage, res: ServerResponse, onRouteError?: (err: unknown, url: string | undefined) => void): boolean {
  if (routes === undefined) return false;
  try {
    return routes(req, res);
  } catch (err) {
    onRouteError?.(err, req.url);
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'internal', message: 'the request could not be handled' } }));
    return true;
  }
}

/**
 * `/metrics` for Prometheus; `/healthz`, the liveness check (200 while `healthy()` says so, else
 * 503); `/readyz`, the readiness check (200 while `ready()` says so, else 503 with its problems);
 * anything else goes to `routes()` when it returns a handler (the monitor's dashboard), else 404.
 */
export async function startOpsServer(opts: {
  port: number;
  /** Address to listen on; loopback unless configured (HTTP_HOST). */
  host?: string;
  registry: Registry;
  healthy: () => boolean;
  ready: () => Readiness;
  routes?: () => HttpRoutes | undefined;
  /** A route that threw (answered 500): for the service's log. */
  onRouteError?: (err: unknown, url: string | undefined) => void;
}): Promise<OpsServer> {
  let closing = false;
  /** Answers not yet begun: told at the close to close their connection too (a /metrics or a dashboard read under way). */
  const pending = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    // Closing: the client takes a new connection for its next request (a dashboard polling every 2 s
    // on a kept-alive one was served, and the close waited, for as long as it polled).
    if (closing) res.setHeader('connection', 'close');
    pending.add(res);
    res.on('finish', () => pending.delete(res)).on('close', () => pending.delete(res));
    if (req.url === '/metrics') {
      opts.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': opts.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500).end(err.message),
      );
    } else if (req.url === '/healthz') {
      const ok = opts.healthy();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ ok }));
    } else if (req.url === '/readyz') {
      const { ready, problems } = opts.ready();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(ready ? { ok: true } : { ok: false, problems }));
    } else if (!routed(opts.routes?.(), req, res, opts.onRouteError)) {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(opts.port, opts.host ?? '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        for (const res of pending) if (!res.headersSent) res.setHeader('connection', 'close');
        server.close(() => resolve());
        server.closeIdleConnections();
        // An answer still being written (a large /metrics) has a moment; then what is left is cut.
        setTimeout(() => server.closeAllConnections(), OPS_CLOSE_GRACE_MS).unref();
      }),
  };
}
