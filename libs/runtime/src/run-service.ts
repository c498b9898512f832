import { createLogger, flushLogSummaries, type Logger } from '@herald/logging';
import { Gauge, type Registry } from 'prom-client';
import { createMetricsRegistry, startOpsServer, type HttpRoutes, type Readiness } from './ops-server.ts';
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
  /** Aborted when a stop is asked for while the service starts: a start-up waiting on something else (the schema's migrations) gives up, and the process ends cleanly. */
  stopping: AbortSignal;
  /**
   * What the start-up waits for, outside the process (undefined: nothing now): /readyz names it
   * while /healthz answers 200, since the process lives (an orchestrator's start-up probe would
   * otherwise restart it in a loop while it waits, say, for prepare to run).
   */
  waiting: (problem: string | undefined) => void;
}

export interface RunningService {
  /** Stop consuming, finish in-flight work within timeoutMs, close connections. */
  stop(timeoutMs: number): Promise<void>;
  /** Routes served on the ops port beside /metrics, /healthz and /readyz (e.g. a dashboard). */
  http?: HttpRoutes;
  /**
   * Whether it can do its work now (/readyz, `herald_ready`): for most services, whether its
   * RabbitMQ connections are open and its consumers subscribed (Broker.health). Left out, a
   * started service is always ready (the monitor: it reports what it cannot reach as alarms).
   */
  ready?: () => Readiness;
}

const READY: Readiness = { ready: true, problems: [] };

/**
 * The frame every Herald service shares: logger, metrics, /metrics + /healthz + /readyz, graceful
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
  /** The service once started: its routes and its readiness. */
  let running: RunningService | undefined = undefined;
  let stopRequested = false;
  let waitingFor: string | undefined;
  const stopping = new AbortController();
  const ready = (): Readiness => {
    if (stopRequested) return { ready: false, problems: ['stopping'] };
    if (running === undefined) return { ready: false, problems: [waitingFor ?? 'starting'] };
    return running.ready?.() ?? READY;
  };
  new Gauge({
    name: 'herald_ready',
    help: 'Whether the process can do its work now (1) or not (0): /readyz, which names what is missing (a RabbitMQ connection being re-opened, a consumer re-subscribing)',
    registers: [registry],
    collect() {
      this.set(ready().ready ? 1 : 0);
    },
  });
  const ops = await startOpsServer({
    port: settings.HTTP_PORT,
    host: settings.HTTP_HOST,
    registry,
    healthy: () => (running !== undefined || waitingFor !== undefined) && !stopRequested,
    ready,
    routes: () => running?.http,
    onRouteError: (err, url) => logger.error({ err, url }, 'an HTTP route of this service threw: answered 500'),
  });
  /** The start-up under way, once begun (a stop asked for before it waits for it). */
  const startUp: { running?: Promise<RunningService> } = {};
  // Heard from before start-up: a SIGTERM while the service starts (a deploy replacing a pod that
  // is still starting) waits for it to finish, then stops it gracefully. Node's default ended the
  // process at once, with a pusher already consuming and sending. The stop's bound counts from the
  // signal, as the orchestrator's grace period does, not from the end of the start-up.
  onShutdown(logger, settings.SHUTDOWN_TIMEOUT_MS, async (deadline) => {
    stopRequested = true;
    stopping.abort();
    // A start-up given up for the stop (stopping) has nothing to stop.
    const service = await startUp.running?.catch(() => undefined);
    const timeoutMs = Math.max(0, deadline - Date.now());
    if (service !== undefined) logger.info({ timeoutMs }, 'stopping: the time left of the shutdown bound');
    await service?.stop(timeoutMs);
    await ops.close();
  });
  logger.info({ opsPort: ops.port, opsHost: settings.HTTP_HOST }, `${name} starting`);
  startUp.running = start({
    logger,
    registry,
    stopping: stopping.signal,
    waiting: (problem) => {
      waitingFor = problem;
    },
  });
  let service: RunningService;
  try {
    service = await startUp.running;
  } catch (err) {
    // Given up for a stop asked for meanwhile: the shutdown handler ends the process.
    if (stopRequested && stopping.signal.aborted) {
      logger.info({ waitingFor }, 'stopped while starting');
      return;
    }
    flushLogSummaries();
    logger.fatal({ err }, 'start-up failed');
    process.exit(1);
  }
  waitingFor = undefined;
  // Healthy and ready from now on, unless a stop was asked for during start-up (it goes on now).
  running = service;
  logger.info({ opsPort: ops.port, opsHost: settings.HTTP_HOST }, `${name} started`);
}
