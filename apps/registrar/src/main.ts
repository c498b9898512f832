import { Queues } from '@herald/contracts';
import { loadConfigOrExit } from '@herald/config';
import { createAppCache, createAudienceStore, createDatabase, databaseOptionsOf, pruneDevices, pruneExpiredMutes, sweepDeletedTopicMembers } from '@herald/db';
import { connectBroker } from '@herald/messaging';
import { runService, startPruner, type Pruner } from '@herald/runtime';
import { registrarConfig } from './config.ts';
import { createRegistrarHandler, registrarErrors } from './registrar.ts';

const config = loadConfigOrExit(registrarConfig);

await runService('registrar', config, async ({ logger, registry, stopping: startStopping, waiting }) => {
  const retentionMs = config.DEVICE_RETENTION_DAYS * 86_400_000;
  const db = createDatabase({ ...databaseOptionsOf(config), logger });
  // Not ready until the schema holds what this release reads (prepare may not have run yet).
  await db.untilMigrated({ signal: startStopping, onWaiting: waiting });
  const broker = await connectBroker({ url: config.AMQP_URL, logger, connectionName: 'registrar', metrics: registry });
  const consumer = await broker.consume({
    queue: Queues.registrations,
    prefetch: config.REGISTRAR_PREFETCH,
    batch: { maxSize: config.REGISTRAR_BATCH_SIZE, maxWaitMs: config.REGISTRAR_BATCH_WAIT_MS },
    retryDelaysMs: config.HERALD_RETRY_DELAYS_MS,
    handle: createRegistrarHandler({ devices: db.devices, audiences: createAudienceStore(db.kysely), apps: createAppCache(db.apps, config.APP_CACHE_TTL_MS), logger, registry }),
    // A value PostgreSQL refuses parks its message alone; a database away defers the batch after a back-off.
    ...registrarErrors,
  });
  // Devices whose token a provider declared dead go after DEVICE_RETENTION_DAYS (device-prune.ts), a
  // statement a batch, so every registrar may prune (through a transaction-mode pooler too).
  const pruner: Pruner | undefined =
    retentionMs > 0
      ? startPruner({
          metricNames: { runs: 'herald_device_prune_runs_total', pruned: 'herald_device_pruned_total' },
          what: 'dead devices',
          prune: (olderThan, batchSize, signal) => pruneDevices(db.kysely, olderThan, batchSize, signal),
          intervalMs: config.DEVICE_PRUNE_INTERVAL_MS,
          retentionMs,
          sharing: 'skip-locked',
          logger,
          registry,
        })
      : undefined;
  // Expired mutes change nothing (targeting reads active ones) and nothing else deletes them (mute-prune.ts).
  const mutePruner = startPruner({
    metricNames: { runs: 'herald_mute_prune_runs_total', pruned: 'herald_mute_pruned_total' },
    what: 'expired mutes',
    prune: (expiredBefore, batchSize, signal) => pruneExpiredMutes(db.kysely, expiredBefore, batchSize, signal),
    intervalMs: config.DEVICE_PRUNE_INTERVAL_MS,
    retentionMs: 0,
    sharing: 'skip-locked',
    logger,
    registry,
  });
  // A deleted topic's memberships are removed by the API after its answer; what a stop or crash left
  // is removed here (topic-member-sweep.ts), whatever its age, a statement a batch, skipping rows
  // another holds, each batch counted as it commits.
  const topicSweeper = startPruner({
    metricNames: { runs: 'herald_topic_member_sweep_runs_total', pruned: 'herald_topic_members_swept_total' },
    what: 'memberships of deleted topics',
    prune: (_start, batchSize, signal, counted) => sweepDeletedTopicMembers(db.kysely, batchSize, signal, counted),
    intervalMs: config.TOPIC_MEMBER_SWEEP_INTERVAL_MS,
    retentionMs: 'none',
    sharing: 'skip-locked',
    logger,
    registry,
  });
  return {
    ready: () => broker.health(),
    stop: async (timeoutMs) => {
      await Promise.all([pruner?.stop(), mutePruner.stop(), topicSweeper.stop()]);
      await consumer.stop(timeoutMs);
      await broker.close();
      await db.close();
    },
  };
});
