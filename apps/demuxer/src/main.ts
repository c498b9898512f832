import { Queues } from '@herald/contracts';
import { loadConfigOrExit } from '@herald/config';
import {
  ORPHAN_WALK_STATEMENTS_PER_RUN,
  createAppCache,
  createDatabase,
  databaseOptionsOf,
  createFanoutRepository,
  deferWhileDatabaseUnavailable,
  pruneJobs,
  pruneOrphanOutcomes,
  refusedValueReason,
  startDatabaseClock,
  type OrphanWalk,
} from '@herald/db';
import { connectBroker } from '@herald/messaging';
import { runService, startPruner, stopBy } from '@herald/runtime';
import { demuxerConfig, demuxerConfigProblems } from './config.ts';
import { createDemuxerHandler } from './demuxer.ts';
import { createDemuxerMetrics } from './demuxer-metrics.ts';
import { countedThen, countParkedChunks, countParkedJobs, createParkWrites, recordParkedFanoutTasks, recordParkedJobs } from './job-parks.ts';
import { WaveMonitor } from './wave-monitor.ts';
import { createAudienceSource } from './audience-reader.ts';
import { createFanoutChunkHandler } from './fanout-chunk.ts';

const config = loadConfigOrExit(demuxerConfig, process.env, demuxerConfigProblems);

await runService('demuxer', config, async ({ logger, registry, stopping: startStopping, waiting }) => {
  const db = createDatabase({ ...databaseOptionsOf(config), logger });
  // Not ready until the schema holds what this release reads (prepare may not have run yet).
  await db.untilMigrated({ signal: startStopping, onWaiting: waiting });
  const broker = await connectBroker({ url: config.AMQP_URL, logger, connectionName: 'demuxer', metrics: registry });
  const scheduling = {
    store: db.scheduled,
    wave: new WaveMonitor(config.SCHEDULE_WARN_RATE_PER_S, config.SCHEDULE_WARN_WINDOW_S),
    horizonDays: config.SCHEDULE_HORIZON_DAYS,
    slackMs: config.SCHEDULE_DUE_SLACK_MS,
  };
  const metrics = createDemuxerMetrics(registry);
  const fanouts = createFanoutRepository(db.kysely);
  const audiences = createAudienceSource(db);
  const apps = createAppCache(db.apps, config.APP_CACHE_TTL_MS);
  // Due, expired and accepted-in-the-future are judged by PostgreSQL's clock, which the deschedulers release by, not this host's.
  // Measured in the background (the host's own clock until then): a start during an outage does not wait for it.
  const clock = startDatabaseClock(db.kysely, { logger });
  const handle = createDemuxerHandler({
    now: clock.now,
    targets: db.devices,
    apps,
    publisher: broker.publisher,
    scheduling,
    metrics,
    logger,
    jobs: db.jobs,
    audiences: { fanouts, audiences },
    packMax: config.PUSH_PACK_SIZE,
    partUsers: config.DEMUXER_BATCH_USERS,
  });
  // Parks recorded in their jobs' status, kept and tried again while PostgreSQL refuses them.
  const parkWrites = createParkWrites(logger);
  // Audience jobs' chunks (ADR 0013): shared by every demuxer, one checkpointed chunk per task.
  const expand = createFanoutChunkHandler({ now: clock.now, fanouts, apps, audiences, publisher: broker.publisher, scheduling, metrics, logger, chunkSize: config.FANOUT_CHUNK_SIZE, packMax: config.PUSH_PACK_SIZE });
  const chunks = await broker.consume({
    queue: Queues.fanout,
    prefetch: config.FANOUT_PREFETCH,
    batch: { maxSize: 1, maxWaitMs: 0 },
    retryDelaysMs: config.HERALD_RETRY_DELAYS_MS,
    handle: expand,
    messageError: refusedValueReason,
    deferOn: deferWhileDatabaseUnavailable,
    onParked: countedThen(countParkedChunks(metrics), recordParkedFanoutTasks(fanouts, parkWrites.write)),
  });
  const consumer = await broker.consume({
    queue: Queues.jobs,
    prefetch: config.DEMUXER_PREFETCH,
    batch: { maxSize: config.DEMUXER_BATCH_SIZE, maxWaitMs: config.DEMUXER_BATCH_WAIT_MS, maxConcurrent: config.DEMUXER_BATCHES_IN_FLIGHT },
    retryDelaysMs: config.HERALD_RETRY_DELAYS_MS,
    handle,
    // One job whose value the database refuses fails the batch's statements: it is found and retried alone.
    messageError: refusedValueReason,
    deferOn: deferWhileDatabaseUnavailable,
    onParked: countedThen(countParkedJobs(metrics, apps), recordParkedJobs(db.jobs, parkWrites.write)),
  });
  // Job status is kept JOB_RETENTION_DAYS after the job's last due time, then the job goes with its
  // outcomes, and so do outcomes written after it went (job-prune.ts): a statement a batch, so every
  // demuxer may prune, through the transaction-mode pooler too.
  const orphanWalk: OrphanWalk = { after: null };
  const jobPruner = startPruner({
    metricNames: { runs: 'herald_job_prune_runs_total', pruned: 'herald_job_pruned_total' },
    what: 'jobs',
    prune: async (olderThan, batchSize, signal) => {
      const jobs = await pruneJobs(db.kysely, olderThan, batchSize, signal);
      const orphans = await pruneOrphanOutcomes(db.kysely, undefined, signal, orphanWalk, ORPHAN_WALK_STATEMENTS_PER_RUN);
      if (orphans > 0) logger.info({ orphans }, 'push outcomes written after their job was pruned: deleted');
      return jobs;
    },
    intervalMs: config.JOB_PRUNE_INTERVAL_MS,
    retentionMs: config.JOB_RETENTION_DAYS * 86_400_000,
    logger,
    registry,
  });
  return {
    ready: () => broker.health(),
    stop: async (timeoutMs) => {
      // No job or chunk is taken from here on; a prune under way stops meanwhile, not past the bound.
      await Promise.all([consumer.stop(timeoutMs), chunks.stop(timeoutMs), stopBy(Date.now() + timeoutMs, 'job pruner', jobPruner.stop(), logger)]);
      await parkWrites.stop();
      clock.stop();
      await broker.close();
      await db.close();
    },
  };
});
