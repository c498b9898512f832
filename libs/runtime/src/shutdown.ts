import { flushLogSummaries, type Logger } from '@herald/logging';

/**
 * SIGTERM/SIGINT: run `stop` (stop consuming, finish in-flight work, close) and exit 0. `stop`
 * is given the deadline, `timeoutMs` from the signal. A second signal, or `stop` overrunning the
 * deadline by more than a grace period, exits at once.
 */
export function onShutdown(logger: Logger, timeoutMs: number, stop: (deadline: number) => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) {
      flushLogSummaries();
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    const deadline = Date.now() + timeoutMs;
    logger.info({ signal, timeoutMs }, 'shutting down: finishing in-flight work');
    const guard = setTimeout(() => {
      flushLogSummaries();
      logger.error({ timeoutMs }, 'shutdown overran its bound: exiting');
      process.exit(1);
    }, timeoutMs + 5_000);
    guard.unref();
    stop(deadline).then(
      () => {
        // The last interval's counts of lines written once per kind (logSummary).
        flushLogSummaries();
        logger.info('shutdown complete');
        process.exit(0);
      },
      (err: unknown) => {
        flushLogSummaries();
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/** Log and exit for errors that escaped every handler: a bug, not an outcome. */
export function exitOnFatal(logger: Logger): void {
  process.on('unhandledRejection', (err) => {
    flushLogSummaries();
    logger.fatal({ err }, 'unhandled rejection');
    process.exit(1);
  });
  process.on('uncaughtException', (err) => {
    flushLogSummaries();
    logger.fatal({ err }, 'uncaught exception');
    process.exit(1);
  });
}
