import { createLogger, type Logger } from '@herald/logging';
import type { Registry } from 'prom-client';
import { createMetricsRegistry, startOpsServer, type HttpRoutes } from './ops-server.ts';
import { exitOnFatal, onShutdown } from './shutdown.ts';

export interface ServiceSettings {
  LOG_LEVEL: string;
  LOG_FORMAT: 'json' | 'pretty' | 'auto';
  HTTP_PORT: number;
  /** Address of the /metrics + /healthz server (loopback by default). */
  HTTP_HOST: string;
  SHUTDOWN_TIMEOUT_MS: number;
}

export interface ServiceContext {
  logger: Logger;
  registry: Registry;
}

export interface RunningService {
  /** Stop consuming, finish in-flight work within timeoutMs, close connections. */
  stop(timeoutMs: number): Promise<void>;
  /** Routes served on the ops port beside /metrics and /healthz (e.g. a dashboard). */
  http?: HttpRoutes;
}

/**
 * The frame every Herald service shares: logger, metrics, /metrics + /healthz, graceful
 * shutdown on SIGTERM/SIGINT. `start` builds the service's dependencies and starts consuming.
 */
export async function runService(
  name: string,
  settings: ServiceSettings,
  start: (ctx: ServiceContext) => Promise<RunningService>,
): Promise<void> {
  const logger = createLogger({ service: name, level: settings.LOG_LEVEL, format: settings.LOG_FORMAT });
  exitOnFatal(logger);
  const registry = createMetricsRegistry(name);
  let healthy = false;
  let routes: HttpRoutes | undefined = undefined;
  const ops = await startOpsServer({ port: settings.HTTP_PORT, host: settings.HTTP_HOST, registry, healthy: () => healthy, routes: () => routes });
  let service: RunningService;
  try {
    service = await start({ logger, registry });
  } catch (err) {
    logger.fatal({ err }, 'start-up failed');
    process.exit(1);
  }
  healthy = true;
  routes = service.http;
  logger.info({ opsPort: ops.port, opsHost: settings.HTTP_HOST }, `${name} started`);
  onShutdown(logger, settings.SHUTDOWN_TIMEOUT_MS, async () => {
    healthy = false;
    await service.stop(settings.SHUTDOWN_TIMEOUT_MS);
    await ops.close();
  });
}
