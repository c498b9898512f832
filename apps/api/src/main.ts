import type { AddressInfo } from 'node:net';
import { loadConfigOrExit } from '@herald/config';
import { Exchanges, Queues } from '@herald/contracts';
import { appHasWebDevices, audienceProblem, cancelJob, createAudienceStore, createAppCache, createAppCredentialStore, createDatabase, databaseOptionsOf, createSecretBox, eraseUser, listUserDevices } from '@herald/db';
import { coalescedPublish, connectBroker } from '@herald/messaging';
import { generateVapidKeys } from '@herald/providers';
import { runService } from '@herald/runtime';
import { createJobRecords } from './job-records.ts';
import { apiConfig } from './config.ts';
import { buildApiServer } from './server.ts';
import { closeGracefully } from './graceful-close.ts';

/** Of the shutdown bound, what the close of the HTTP server leaves for writing the published marks and closing RabbitMQ and PostgreSQL: 3 s, or a third of a shorter bound. */
const closeReserveMs = (timeoutMs: number): number => Math.min(3_000, timeoutMs / 3);

const config = loadConfigOrExit(apiConfig);

await runService('api', config, async ({ logger, registry, stopping: startStopping, waiting }) => {
  const db = createDatabase({ ...databaseOptionsOf(config), logger, poolSize: 10 });
  // Job-id records commit without waiting for the WAL flush: one lost in a PostgreSQL crash only
  // lets a repost publish the job again, and its pushIds are deduplicated by the pushers' ledger.
  const jobDb = createDatabase({ ...databaseOptionsOf(config), logger, poolSize: 10, synchronousCommit: false });
  // Not ready until the schema holds what this release reads (prepare may not have run yet).
  await db.untilMigrated({ signal: startStopping, onWaiting: waiting });
  const jobs = createJobRecords(jobDb.jobs, logger);
  const broker = await connectBroker({ url: config.AMQP_URL, logger, connectionName: 'api', consumes: false, metrics: registry, confirmTimeoutMs: config.API_PUBLISH_CONFIRM_TIMEOUT_MS });
  // Jobs accepted at once (a batch request, concurrent requests) share RabbitMQ messages; each
  // request is still answered on its own job's confirm.
  const publishJob = coalescedPublish(broker.publisher, { packMax: config.JOB_PACK_SIZE, callTimeoutMs: config.API_PUBLISH_CONFIRM_TIMEOUT_MS });
  const box = config.HERALD_SECRET_KEY === undefined ? undefined : createSecretBox(config.HERALD_SECRET_KEY);
  const server = buildApiServer({
    jobs,
    apps: createAppCache(db.apps, config.APP_CACHE_TTL_MS),
    webDevices: createAppCache({ get: (app) => appHasWebDevices(db.kysely, app) }, config.APP_CACHE_TTL_MS),
    // Jobs are validated by the API with the PushJob contract; publish resolves on the broker's confirm.
    publish: (job) => publishJob({ exchange: Exchanges.jobs, routingKey: Queues.jobs, body: job, messageId: job.id }),
    publishRegistration: (r) => broker.publisher.publish({ exchange: Exchanges.registrations, routingKey: Queues.registrations, body: r }),
    publishChange: (c) => broker.publisher.publish({ exchange: Exchanges.changes, routingKey: Queues.changes, body: c, messageId: c.id }),
    subscriptions: db.subscriptions,
    resourceTypes: config.WEBHOOK_RESOURCE_TYPES,
    maxChangeBytes: config.WEBHOOK_MAX_CHANGE_BYTES,
    allowHttpLocalhost: config.WEBHOOK_ALLOW_HTTP_LOCALHOST,
    maxSubscriptionsPerTeam: config.WEBHOOK_MAX_SUBSCRIPTIONS_PER_TEAM,
    cancel: (jobId) => cancelJob(db, jobId),
    audienceProblem: (app, audience) => audienceProblem(db.kysely, app, audience),
    // The demuxer's horizon too: a job the API answers 202 is not parked bad-schedule after.
    scheduleHorizonDays: config.SCHEDULE_HORIZON_DAYS,
    preferences: db.preferences,
    audiences: createAudienceStore(db.kysely),
    userDevices: (app, userId, limit) => listUserDevices(db.kysely, app, userId, limit),
    eraseUser: (app, userId) => eraseUser(db.kysely, app, userId),
    keys: db.apiKeys,
    admin: { store: createAppCredentialStore(db.kysely, box), list: () => db.apps.list(), keys: db.apiKeys, audit: db.audit, generateVapidKeys },
    vapidApps: db.apps,
    adminKey: config.HERALD_ADMIN_KEY,
    bodyLimitBytes: config.API_BODY_LIMIT_BYTES,
    maxBodyBytesInFlight: config.API_MAX_BODY_BYTES_IN_FLIGHT,
    requestTimeoutMs: config.API_REQUEST_TIMEOUT_MS,
    keyCacheTtlMs: config.API_KEY_CACHE_TTL_MS,
    logger,
    registry,
  });
  await server.listen({ port: config.API_PORT, host: config.API_HOST });
  logger.info({ apiPort: (server.server.address() as AddressInfo).port, apiHost: config.API_HOST }, 'HTTP API listening');
  return {
    ready: () => broker.health(),
    stop: async (timeoutMs) => {
      // What is left of the bound after the close goes to the marks, the broker and the database.
      if ((await closeGracefully(server, timeoutMs - closeReserveMs(timeoutMs))) === 'cut') logger.warn('requests still open at the shutdown bound: their connections cut');
      await jobs.flush();
      await broker.close();
      await Promise.all([db.close(), jobDb.close()]);
    },
  };
});
