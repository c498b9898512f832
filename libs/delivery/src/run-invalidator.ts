import { invalidationQueueFor, type Platform } from '@herald/contracts';
import { createDatabase, databaseOptionsOf, type DatabaseSettings } from '@herald/db';
import { connectBroker } from '@herald/messaging';
import { runService, type ServiceSettings } from '@herald/runtime';
import { createInvalidatorHandler, invalidatorErrors } from './invalidator.ts';
import { createInvalidatorMetrics } from './invalidator-metrics.ts';

export interface InvalidatorSettings extends ServiceSettings, DatabaseSettings {
  AMQP_URL: string;
  INVALIDATOR_PREFETCH: number;
  INVALIDATOR_BATCH_SIZE: number;
  INVALIDATOR_BATCH_WAIT_MS: number;
  HERALD_RETRY_DELAYS_MS: readonly number[];
}

/** Wire an invalidator: consume `push.<platform>.invalidations`, mark devices dead in PostgreSQL. */
export async function runInvalidator(platform: Platform, config: InvalidatorSettings): Promise<void> {
  const name = `${platform}-invalidator`;
  await runService(name, config, async ({ logger, registry, stopping: startStopping, waiting }) => {
    const db = createDatabase({ ...databaseOptionsOf(config), logger });
    // Not ready until the schema holds what this release reads (prepare may not have run yet).
    await db.untilMigrated({ signal: startStopping, onWaiting: waiting });
    const broker = await connectBroker({ url: config.AMQP_URL, logger, connectionName: name, metrics: registry });
    const consumer = await broker.consume({
      queue: invalidationQueueFor(platform),
      prefetch: config.INVALIDATOR_PREFETCH,
      batch: { maxSize: config.INVALIDATOR_BATCH_SIZE, maxWaitMs: config.INVALIDATOR_BATCH_WAIT_MS },
      retryDelaysMs: config.HERALD_RETRY_DELAYS_MS,
      handle: createInvalidatorHandler({ platform, devices: db.devices, metrics: createInvalidatorMetrics(registry), logger }),
      // A value PostgreSQL refuses parks its message alone; a database away defers the batch after a back-off.
      ...invalidatorErrors,
    });
    return {
      ready: () => broker.health(),
      stop: async (timeoutMs) => {
        await consumer.stop(timeoutMs);
        await broker.close();
        await db.close();
      },
    };
  });
}
