import { Queues } from '@herald/contracts';
import { loadConfigOrExit } from '@herald/config';
import { createAppCache, createAudienceStore, createDatabase, refusedValueReason } from '@herald/db';
import { connectBroker } from '@herald/messaging';
import { runService } from '@herald/runtime';
import { registrarConfig } from './config.ts';
import { createRegistrarHandler } from './registrar.ts';

const config = loadConfigOrExit(registrarConfig);

await runService('registrar', config, async ({ logger, registry }) => {
  const db = createDatabase({ url: config.DATABASE_URL, schema: config.DATABASE_SCHEMA, logger });
  const broker = await connectBroker({ url: config.AMQP_URL, logger, connectionName: 'registrar', metrics: registry });
  const consumer = await broker.consume({
    queue: Queues.registrations,
    prefetch: config.REGISTRAR_PREFETCH,
    batch: { maxSize: config.REGISTRAR_BATCH_SIZE, maxWaitMs: config.REGISTRAR_BATCH_WAIT_MS },
    retryDelaysMs: config.HERALD_RETRY_DELAYS_MS,
    handle: createRegistrarHandler({ devices: db.devices, audiences: createAudienceStore(db.kysely), apps: createAppCache(db.apps, config.APP_CACHE_TTL_MS), logger }),
    messageError: refusedValueReason,
  });
  return {
    stop: async (timeoutMs) => {
      await consumer.stop(timeoutMs);
      await broker.close();
      await db.close();
    },
  };
});
