import type { Platform } from '@herald/contracts';
import type { ConfigOf } from '@herald/config';
import { createDatabase, databaseOptionsOf } from '@herald/db';
import { connectBroker } from '@herald/messaging';
import { runService } from '@herald/runtime';
import type { deschedulerConfig } from './descheduler-config.ts';
import { startStoreDescheduler } from './in-process-descheduler.ts';

/** Wire a descheduler: store + LISTEN connection + broker, releasing `platform`'s due pushes. */
export async function runDescheduler(platform: Platform, config: ConfigOf<typeof deschedulerConfig>): Promise<void> {
  const name = `${platform}-descheduler`;
  await runService(name, config, async ({ logger, registry, stopping: startStopping, waiting }) => {
    // One connection per batch in flight, one for the look at the next due time, one spare.
    // A batch held by a descheduler that vanished (its host gone without a word) is rolled back by
    // PostgreSQL after DESCHEDULER_HELD_BATCH_TIMEOUT_MS, not when the server's TCP keepalive gives up.
    const db = createDatabase({
      ...databaseOptionsOf(config),
      logger,
      poolSize: config.DESCHEDULER_CONCURRENCY + 2,
      idleInTransactionTimeoutMs: config.DESCHEDULER_HELD_BATCH_TIMEOUT_MS,
    });
    // Not ready until the schema holds what this release reads (prepare may not have run yet).
    await db.untilMigrated({ signal: startStopping, onWaiting: waiting });
    const broker = await connectBroker({ url: config.AMQP_URL, logger, connectionName: name, metrics: registry, consumes: false });
    const descheduler = await startStoreDescheduler(platform, config, { db, broker, logger, registry });
    return {
      ready: () => broker.health(),
      stop: async (timeoutMs) => {
        // A batch RabbitMQ does not confirm (a memory or disk alarm) is rolled back after half the
        // bound, leaving the rest for its rollback and the closes.
        await descheduler.stop(timeoutMs / 2);
        await broker.close();
        await db.close();
      },
    };
  });
}
