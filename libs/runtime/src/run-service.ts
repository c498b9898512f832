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
  /** The start-up under way, once begun (a stop asked for before it waits for it). */
  const startUp: { running?: Promise<RunningService> } = {};
  let stopRequested = false;
  // Heard from before start-up: a SIGTERM while the service starts (a deploy replacing a pod that
  // is still starting) waits for it to finish, then stops it gracefully. Node's default ended the
  // process at once, with a pusher already consuming and sending.
  onShutdown(logger, settings.SHUTDOWN_TIMEOUT_MS, async () => {
    stopRequested = true;
    healthy = false;
    const service = await startUp.running;
    await service?.stop(settings.SHUTDOWN_TIMEOUT_MS);
    await ops.close();
  });
  logger.info({ opsPort: ops.port, opsHost: settings.HTTP_HOST }, `${name} starting`);
  startUp.running = start({ logger, registry });
  let service: RunningService;
  try {
    service = await startUp.running;
  } catch (err) {
    logger.fatal({ err }, 'start-up failed');
    process.exit(1);
  }
  // A stop asked for during start-up goes on now: the service never reads healthy.
  healthy = !stopRequested;
  routes = service.http;
  logger.info({ opsPort: ops.port, opsHost: settings.HTTP_HOST }, `${name} started`);
}
