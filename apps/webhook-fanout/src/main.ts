import { Queues } from '@herald/contracts';
import { loadConfigOrExit } from '@herald/config';
import { createDatabase, databaseOptionsOf, deferWhileDatabaseUnavailable, refusedValueReason } from '@herald/db';
import { connectBroker } from '@herald/messaging';
import { runService } from '@herald/runtime';
import { fanoutConfig } from './config.ts';
import { createFanoutHandler } from './fanout.ts';
import { createFanoutMetrics } from './fanout-metrics.ts';

const config = loadConfigOrExit(fanoutConfig);

await runService('webhook-fanout', config, async ({ logger, registry, stopping: startStopping, waiting }) => {
  const db = createDatabase({ ...databaseOptionsOf(config), logger });
  // Not ready until the schema holds what this release reads (prepare may not have run yet).
  await db.untilMigrated({ signal: startStopping, onWaiting: waiting });
  const broker = await connectBroker({ url: config.AMQP_URL, logger, connectionName: 'webhook-fanout', metrics: registry });
  const handle = createFanoutHandler({
    subscriptions: db.subscriptions,
    publisher: broker.publisher,
    resourceTypes: config.WEBHOOK_RESOURCE_TYPES,
    maxChangeBytes: config.WEBHOOK_MAX_CHANGE_BYTES,
    metrics: createFanoutMetrics(registry),
    logger,
  });
  const consumer = await broker.consume({
    queue: Queues.changes,
    prefetch: config.FANOUT_PREFETCH,
    batch: { maxSize: config.FANOUT_BATCH_SIZE, maxWaitMs: config.FANOUT_BATCH_WAIT_MS },
    retryDelaysMs: config.HERALD_RETRY_DELAYS_MS,
    handle,
    messageError: refusedValueReason,
    deferOn: deferWhileDatabaseUnavailable,
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
