import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Registry } from 'prom-client';

export { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** A registry with process metrics (CPU, memory, event-loop lag) already collected. */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Extra routes a service serves beside /metrics and /healthz; returns false for a URL it does not serve. */
export type HttpRoutes = (req: IncomingMessage, res: ServerResponse) => boolean;

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * `/metrics` for Prometheus and `/healthz` (200 while `healthy()` says so, else 503); anything else
 * goes to `routes()` when it returns a handler (the monitor's dashboard), else 404.
 */
export async function startOpsServer(opts: {
  port: number;
  /** Address to listen on; loopback unless configured (HTTP_HOST). */
  host?: string;
  registry: Registry;
  healthy: () => boolean;
  routes?: () => HttpRoutes | undefined;
}): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/metrics') {
      opts.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': opts.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500).end(err.message),
      );
    } else if (req.url === '/healthz') {
      const ok = opts.healthy();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ ok }));
    } else if (opts.routes?.()?.(req, res) !== true) {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(opts.port, opts.host ?? '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
