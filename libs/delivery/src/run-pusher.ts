import { hostname } from 'node:os';
import { sendQueueFor, type Platform } from '@herald/contracts';
import { createAppCache, createCancelledJobsReader, createDatabase, createProviderLaneStore, databaseOptionsOf, deferWhileDatabaseUnavailable, refusedValueReason, startDatabaseClock, type DatabaseSettings } from '@herald/db';
import type { Logger } from '@herald/logging';
import { connectBroker, JITTER } from '@herald/messaging';
import type { PushProvider } from '@herald/providers';
import { runService, stopBy, type Registry, type RunningService, type ServiceContext, type ServiceSettings } from '@herald/runtime';
import { createPusherHandler, MAX_HOLD_DELAY_MS } from './pusher.ts';
import { windowFor } from './pusher-config.ts';
import { createPusherMetrics } from './pusher-metrics.ts';
import { createPusherLimiter, type RateLimitSettings } from './pusher-limiter.ts';
import { checkLedgerRetention, startLedgerPruner } from './ledger-pruner.ts';
import { createAppDelivery, type AppDeliverySettings } from './app-delivery.ts';
import { onPushParked, pushesAlreadyDone } from './park-outcomes.ts';
import type { BesideWork, PusherParts } from './in-process-descheduler.ts';
import { CancelledJobs } from './cancelled-jobs.ts';
import { ProviderLanes } from './provider-lanes.ts';
import { recordLaneState } from './lane-state-recorder.ts';

/** How often a pusher re-reads the cancelled jobs (a cancel stops queued pushes within about this). */
export const CANCELLED_JOBS_REFRESH_MS = 250;

export interface PusherSettings extends ServiceSettings, RateLimitSettings, AppDeliverySettings, DatabaseSettings {
  AMQP_URL: string;
  /** A pusher that releases scheduled pushes itself (the web-pusher): how long its batch's transaction may idle (DESCHEDULER_HELD_BATCH_TIMEOUT_MS). */
  DESCHEDULER_HELD_BATCH_TIMEOUT_MS?: number;
  /** Unset: two batches (windowFor). */
  PUSHER_PREFETCH: number | undefined;
  PUSHER_BATCH_SIZE: number;
  PUSHER_BATCH_WAIT_MS: number;
  PUSHER_RETRY_DELAYS_MS: readonly number[];
  LEDGER_LEASE_MS: number;
  /** The APNs pusher: the least wait before a push APNs answered with a 5xx is tried again (Apple asks 15 minutes). */
  APNS_SERVER_ERROR_RETRY_MS?: number;
  LEDGER_PRUNE_INTERVAL_MS: number;
  LEDGER_RETENTION_HOURS: number;
  APP_CACHE_TTL_MS: number;
  PREFERENCES_RECHECK_AFTER_MS: number;
  PROVIDER_DOWN_HOLD_MS: number;
  PROVIDER_DOWN_PROBE_MS: number;
  PROVIDER_DOWN_MIN_SENDS: number;
  PROVIDER_DOWN_AFTER_MS: number;
}

export interface ProviderLimits {
  /** The longest a provider request may take: a send must end well inside its ledger claim. */
  maxRequestTimeoutMs: number;
  /**
   * The clock a provider counts a push's remaining time to live by (FCM's android.ttl, Web Push's
   * TTL): PostgreSQL's, as the pusher judges expiry (measured before the first push is taken; this
   * host's until then). By the host's, a host two minutes fast sent a push with a minute left as
   * ttl 0 (never stored for an offline phone), one two minutes slow kept it stored past its expiry.
   */
  now: () => Date;
}

/**
 * A push's ledger claim must outlive its send, or another copy of it could be claimed and sent
 * meanwhile. A batch waits for rate-limit budget for at most half a lease after its claim; the
 * request then gets at most 40% of the lease, leaving a tenth for recording the outcome.
 */
export const providerLimits = (leaseMs: number, now: () => Date = () => new Date()): ProviderLimits => ({ maxRequestTimeoutMs: Math.max(200, Math.floor(leaseMs * 0.4)), now });

/**
 * The deadline of a pusher's ledger statements (DatabaseOptions.ledgerTimeoutMs): a sixth of a lease,
 * so a renewal (every third of a lease) or a mark sent to a primary that vanished without a word is
 * abandoned and tried again on a new connection before the claims it keeps run out.
 */
export const ledgerTimeoutOf = (leaseMs: number): number => Math.max(1_000, Math.floor(leaseMs / 6));

/** The provider's request timeout, capped by `limits` (with a warning when the cap applies). */
export function capRequestTimeout<S extends { requestTimeoutMs: number }>(settings: S, limits: ProviderLimits, logger: Logger): S {
  if (settings.requestTimeoutMs <= limits.maxRequestTimeoutMs) return settings;
  logger.warn(
    { configuredMs: settings.requestTimeoutMs, cappedMs: limits.maxRequestTimeoutMs },
    'provider request timeout capped at 40% of LEDGER_LEASE_MS so a send cannot outlive its ledger claim',
  );
  return { ...settings, requestTimeoutMs: limits.maxRequestTimeoutMs };
}

/** The longest a held push waits in a delay queue: the longest hold delay and the fifth the spread adds. */
const HELD_AT_MOST_MS = Math.ceil(MAX_HOLD_DELAY_MS * (1 + JITTER));

/** How often a pusher writes job outcomes kept from a failed write, when no batch did it first. */
const OUTCOME_FLUSH_INTERVAL_MS = 5_000;

/** Makes a pusher's provider; `registry` is the service's, for what the provider's credentials are worth watching (an APNs certificate's expiry). */
export type ProviderFactory = (logger: Logger, limits: ProviderLimits, registry: Registry) => Promise<PushProvider>;

/**
 * Wire a pusher: provider + ledger + broker, consuming `push.<platform>.send`. `alongside` starts
 * work that shares the pusher's database and broker (the web-pusher's in-process descheduler);
 * it is stopped beside the consumer (startPusher).
 */
export async function runPusher(
  platform: Platform,
  config: PusherSettings,
  createProvider: ProviderFactory,
  alongside?: (parts: PusherParts) => Promise<BesideWork>,
): Promise<void> {
  await runService(`${platform}-pusher`, config, (ctx) => startPusher(platform, config, createProvider, ctx, alongside));
}

/**
 * runPusher's service, started (runService stops it on SIGTERM). Its stop cancels the consumer
 * first, so no push is taken once a stop begins, and gives its in-flight pushes the whole bound;
 * the work beside it (pruning, the cancelled jobs' poll, the limiter, `alongside`) stops meanwhile,
 * each left unfinished at the bound: none can keep the consumer taking and sending pushes until the
 * runtime's guard ends the process mid-send (its claims then lapse, and the pushes go twice).
 */
export async function startPusher(
  platform: Platform,
  config: PusherSettings,
  createProvider: ProviderFactory,
  { logger, registry, stopping: startStopping, waiting }: ServiceContext,
  alongside?: (parts: PusherParts) => Promise<BesideWork>,
): Promise<RunningService> {
  const name = `${platform}-pusher`;
  // This process: what its ledger claims and its lanes' rows (provider-lane-store.ts) are named by.
  const instance = `${name}@${hostname()}:${process.pid}`;
  const retryDelays = config.PUSHER_RETRY_DELAYS_MS.map((d) => Math.max(d, config.APNS_SERVER_ERROR_RETRY_MS ?? 0));
  // A held copy of a push delivered before comes back up to the hold and one more held wait after it
  // was due, and one past its hold on a lane that answers may then go round the retry schedule.
  checkLedgerRetention(config.LEDGER_RETENTION_HOURS * 3_600_000, config.LEDGER_LEASE_MS, retryDelays, config.PROVIDER_DOWN_HOLD_MS === 0 ? 0 : config.PROVIDER_DOWN_HOLD_MS + HELD_AT_MOST_MS);
  // PostgreSQL's clock once measured (below), before any push is taken; the host's until then.
  let clockNow = (): Date => new Date();
  const limits = providerLimits(config.LEDGER_LEASE_MS, () => clockNow());
  const provider = await createProvider(logger, limits, registry);
  const db = createDatabase({
    ...databaseOptionsOf(config),
    logger,
    idleInTransactionTimeoutMs: config.DESCHEDULER_HELD_BATCH_TIMEOUT_MS,
    ledgerTimeoutMs: ledgerTimeoutOf(config.LEDGER_LEASE_MS),
  });
  // Not ready until the schema holds what this release reads (prepare may not have run yet).
  await db.untilMigrated({ signal: startStopping, onWaiting: waiting });
  // Expiry (and a held push's hold) is judged by PostgreSQL's clock, which the demuxer and the
  // deschedulers go by, not this host's: one a minute fast dropped pushes released on time as
  // expired. Read as this host's clock plus an offset measured every minute (no query a push);
  // measured before the first push is taken (PostgreSQL has just answered: untilMigrated).
  const clock = startDatabaseClock(db.kysely, { logger });
  await clock.measured;
  clockNow = clock.now;
  const broker = await connectBroker({ url: config.AMQP_URL, logger, connectionName: name, metrics: registry });
  const { limiter, close: closeLimiter } = await createPusherLimiter(platform, config, logger, registry);
  const stopping = new AbortController();
  const recordingStop = new AbortController();
  const cancelled = new CancelledJobs(createCancelledJobsReader(db.kysely), {
    intervalMs: CANCELLED_JOBS_REFRESH_MS,
    recheckMs: config.PREFERENCES_RECHECK_AFTER_MS,
    logger,
  });
  await cancelled.start();
  // Per-app providers (own credentials, else `provider`), temporary bans, job-status outcomes.
  const appTimeout = capRequestTimeout({ requestTimeoutMs: config.APP_REQUEST_TIMEOUT_MS }, limits, logger).requestTimeoutMs;
  const perApp = createAppDelivery(platform, { ...config, APP_REQUEST_TIMEOUT_MS: appTimeout }, db, provider, logger, registry, limits.now);
  const metrics = createPusherMetrics(registry);
  const lanes = new ProviderLanes(
    {
      holdMs: config.PROVIDER_DOWN_HOLD_MS,
      probeMs: config.PROVIDER_DOWN_PROBE_MS,
      minSends: config.PROVIDER_DOWN_MIN_SENDS,
      afterMs: config.PROVIDER_DOWN_AFTER_MS,
      // Longer than any held push waits (the longest hold delay and its fifth at random).
      quietMs: HELD_AT_MOST_MS,
    },
    platform,
    logger,
    metrics.laneDown,
  );
  // Where the monitor sees a lane down: no queue shows it (its pushes are acked into the delay queues).
  const laneState = recordLaneState(lanes, createProviderLaneStore(db.kysely, { instance, platform }), logger);
  const handle = createPusherHandler({
    platform,
    lastAttempt: config.PUSHER_RETRY_DELAYS_MS.length + 1,
    ...perApp,
    ledger: db.ledger,
    cancelled,
    apps: createAppCache(db.apps, config.APP_CACHE_TTL_MS),
    publisher: broker.publisher,
    metrics,
    logger,
    owner: instance,
    leaseMs: config.LEDGER_LEASE_MS,
    preferencesRecheckMs: config.PREFERENCES_RECHECK_AFTER_MS,
    ...(config.APNS_SERVER_ERROR_RETRY_MS !== undefined && { serverErrorRetryMs: config.APNS_SERVER_ERROR_RETRY_MS }),
    lanes,
    signal: stopping.signal,
    recordingStop: recordingStop.signal,
    ...(limiter !== undefined && { limiter }),
    now: clock.now,
  });
  const sendWindow = windowFor(config);
  const consumer = await broker.consume({
    queue: sendQueueFor(platform),
    prefetch: sendWindow,
    maxInFlight: sendWindow,
    batch: { maxSize: config.PUSHER_BATCH_SIZE, maxWaitMs: config.PUSHER_BATCH_WAIT_MS },
    retryDelaysMs: config.PUSHER_RETRY_DELAYS_MS,
    handle,
    // A push whose value the database refuses is retried and parked alone (its claim deferred a re-run's send, never doubled it).
    messageError: refusedValueReason,
    deferOn: deferWhileDatabaseUnavailable,
    // Every park (the handler's, a retry that ran out, the delivery limit) counted, and in its job's status.
    onParked: onPushParked(platform, metrics, perApp.outcomes),
    // A packed message's parts sent before a sibling kept failing are acked at the delivery limit, not parked.
    alreadyDone: pushesAlreadyDone(db.ledger),
  });
  const pruner = startLedgerPruner({
    ledger: db.ledger,
    intervalMs: config.LEDGER_PRUNE_INTERVAL_MS,
    retentionMs: config.LEDGER_RETENTION_HOURS * 3_600_000,
    logger,
    registry,
  });
  // Outcomes PostgreSQL refused are kept by the recorder until a flush gets them in: after each
  // batch, and here too, so they are written when the pusher has nothing more to send.
  const outcomeFlush = setInterval(() => void perApp.outcomes?.flush(), OUTCOME_FLUSH_INTERVAL_MS);
  outcomeFlush.unref();
  const beside = await alongside?.({ db, broker, logger, registry });
  return {
    ready: () => broker.health(),
    stop: async (timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      const left = (): number => Math.max(0, deadline - Date.now());
      // Pushes waiting for budget give up at once (deferred), so shutdown never waits on pacing.
      stopping.abort();
      // No push is taken from here on; those already taken are recorded for as long as the
      // shutdown's bound allows, no longer. The rest stops meanwhile, none of it past the bound: a
      // descheduler's batch RabbitMQ does not confirm (an alarm) is rolled back after half of it.
      await Promise.all([
        consumer.stop(left()),
        beside && stopBy(deadline, 'descheduler', beside.stop(left() / 2), logger),
        stopBy(deadline, 'ledger pruner', pruner.stop(), logger),
        stopBy(deadline, 'cancelled jobs poll', cancelled.stop(), logger),
        stopBy(deadline, 'rate limiter', closeLimiter(), logger),
      ]);
      recordingStop.abort();
      clock.stop();
      await stopBy(deadline, 'provider lanes record', laneState.stop(), logger);
      lanes.close();
      clearInterval(outcomeFlush);
      await perApp.outcomes?.flush();
      await perApp.providers.close();
      await broker.close();
      await db.close();
    },
  };
}
