import type { Platform } from '@herald/contracts';
import type { ConfigOf } from '@herald/config';
import { createDatabase } from '@herald/db';
import { connectBroker } from '@herald/messaging';
import { runService } from '@herald/runtime';
import type { deschedulerConfig } from './descheduler-config.ts';
import { startDescheduler } from './descheduler.ts';
import { createDeschedulerMetrics } from './descheduler-metrics.ts';

/** Wire a descheduler: store + LISTEN connection + broker, releasing `platform`'s due pushes. */
export async function runDescheduler(platform: Platform, config: ConfigOf<typeof deschedulerConfig>): Promise<void> {
  const name = `${platform}-descheduler`;
  await runService(name, config, async ({ logger, registry }) => {
    // One connection per batch in flight, one for the look at the next due time, one spare.
    const db = createDatabase({ url: config.DATABASE_URL, schema: config.DATABASE_SCHEMA, logger, poolSize: config.DESCHEDULER_CONCURRENCY + 2 });
    const broker = await connectBroker({ url: config.AMQP_URL, logger, connectionName: name, metrics: registry });
    // Listen before the first look at the store, so nothing scheduled in between is missed.
    let wakeUp: (earliest: Date) => void = () => undefined;
    const listener = await db.scheduled.listen(platform, (earliest) => wakeUp(earliest));
    const descheduler = startDescheduler({
      platform,
      store: db.scheduled,
      publisher: broker.publisher,
      metrics: createDeschedulerMetrics(registry),
      logger,
      batchSize: config.DESCHEDULER_BATCH_SIZE,
      concurrency: config.DESCHEDULER_CONCURRENCY,
      recheckMs: config.DESCHEDULER_RECHECK_MS,
      errorBackoffMs: config.DESCHEDULER_ERROR_BACKOFF_MS,
    });
    wakeUp = (earliest) => descheduler.notify(earliest);
    return {
      stop: async () => {
        await descheduler.stop();
        await listener.close();
        await broker.close();
        await db.close();
      },
    };
  });
}
