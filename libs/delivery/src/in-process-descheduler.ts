import type { Platform } from '@herald/contracts';
import { startDatabaseClock, type Database } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { Broker } from '@herald/messaging';
import type { Registry } from '@herald/runtime';
import { startDescheduler } from './descheduler.ts';
import { createDeschedulerMetrics } from './descheduler-metrics.ts';

export interface InProcessDeschedulerSettings {
  DESCHEDULER_BATCH_SIZE: number;
  PUSH_PACK_SIZE?: number;
  DESCHEDULER_CONCURRENCY: number;
  DESCHEDULER_RECHECK_MS: number;
  DESCHEDULER_ERROR_BACKOFF_MS: number;
}

/**
 * Work a pusher runs beside its consumer (runPusher's `alongside`). `stop` is given the time the
 * shutdown leaves it: what still waits after that is given up (a descheduler's batch rolled back).
 */
export interface BesideWork {
  stop(timeoutMs?: number): Promise<void>;
}

/** What a pusher shares with work it runs beside its consumer (runPusher's `alongside`). */
export interface PusherParts {
  db: Database;
  broker: Broker;
  logger: Logger;
  registry: Registry;
}

/**
 * The one wiring of a descheduler: LISTEN for wake-ups, then release `platform`'s due pushes from
 * the store in SKIP LOCKED batches. The descheduler services (runDescheduler) and the pushers that
 * deschedule in process both start theirs here. Stopping it leaves `parts` open; a batch still
 * waiting for RabbitMQ's confirms `timeoutMs` after the stop began is rolled back (Descheduler.stop).
 */
export async function startStoreDescheduler(platform: Platform, config: InProcessDeschedulerSettings, parts: PusherParts): Promise<BesideWork> {
  // Listen before the first look at the store, so nothing scheduled in between is missed.
  let wakeUp: (earliest: Date) => void = () => undefined;
  const listener = await parts.db.scheduled.listen(platform, (earliest) => wakeUp(earliest));
  // Due is decided by PostgreSQL's clock, one for every descheduler of the fleet, not this host's.
  // Measured in the background (the host's own clock until then): a start during an outage does not wait for it.
  const clock = startDatabaseClock(parts.db.kysely, { logger: parts.logger });
  const descheduler = startDescheduler({
    now: clock.now,
    platform,
    store: parts.db.scheduled,
    publisher: parts.broker.publisher,
    metrics: createDeschedulerMetrics(parts.registry),
    logger: parts.logger,
    batchSize: config.DESCHEDULER_BATCH_SIZE,
    ...(config.PUSH_PACK_SIZE !== undefined && { packMax: config.PUSH_PACK_SIZE }),
    concurrency: config.DESCHEDULER_CONCURRENCY,
    recheckMs: config.DESCHEDULER_RECHECK_MS,
    errorBackoffMs: config.DESCHEDULER_ERROR_BACKOFF_MS,
  });
  wakeUp = (earliest) => descheduler.notify(earliest);
  return {
    stop: async (timeoutMs) => {
      await descheduler.stop(timeoutMs);
      clock.stop();
      await listener.close();
    },
  };
}

/**
 * The descheduler-free path (issue 21): a pusher releases its platform's due scheduled pushes
 * itself, with the same store, LISTEN/NOTIFY wake-ups and SKIP LOCKED batches as a descheduler
 * service, so any number of pushers run side by side without double sends.
 */
export function startInProcessDescheduler(platform: Platform, config: InProcessDeschedulerSettings, parts: PusherParts): Promise<BesideWork> {
  return startStoreDescheduler(platform, config, { ...parts, logger: parts.logger.child({ component: 'descheduler' }) });
}
