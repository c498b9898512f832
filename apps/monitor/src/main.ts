import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { loadConfigOrExit } from '@herald/config';
import { WorkQueues, pushesPerMessage } from '@herald/contracts';
import { createAnnouncedAlarmStore, createDatabase, databaseOptionsOf, createFanoutRepository, holdLease, startDatabaseClock, startReplayedOutcomes, withParkedLease } from '@herald/db';
import { connectBroker, parkedNameOf, type Broker } from '@herald/messaging';
import { createManagementApi, oldestAgeWindowMs, vhostOf } from '@herald/monitoring';
import { runService, within } from '@herald/runtime';
import { alarmAnnouncer, announcedAtStart, seenSince, type AlarmView, type Evidence } from './alarm-announcer.ts';
import { monitorConfig } from './config.ts';
import { dashboardRoutes } from './dashboard-routes.ts';
import { History } from './history.ts';
import { createMonitorMetrics } from './monitor-metrics.ts';
import { LOGIN_PAGE } from './login-page.ts';
import { createOperatorGate } from './operator-gate.ts';
import { startQueueMonitor, type LiveCounts } from './queue-monitor.ts';
import { startScheduledCounts } from './scheduled-counts.ts';
import { cachedRunningFanouts } from './running-fanouts.ts';
import { createWebhook } from './webhook.ts';

const config = loadConfigOrExit(monitorConfig);
const page = readFileSync(new URL('./dashboard.html', import.meta.url), 'utf8');
/** A revoked operator key stops working (its dashboard sessions too) within this. */
const OPERATOR_KEY_CACHE_TTL_MS = 5_000;
/** A monitor that dies hands the alarm announcements to another within this. */
const ALARMS_LEASE_MS = 15_000;

await runService('monitor', config, async ({ logger, registry }) => {
  const vhost = vhostOf(config.AMQP_URL);
  const metrics = createMonitorMetrics(registry);
  const db = createDatabase({ ...databaseOptionsOf(config), logger, poolSize: 2 });
  // Not waiting for `prepare`, unlike the other services: the monitor must watch RabbitMQ whatever
  // PostgreSQL answers (refused credentials, a restore under way, a schema behind), and a reader of
  // a table not there yet (readDownLanes: provider_lanes) says so and leaves the others reading.
  const alarmsLease = { name: 'monitor-alarms', holder: `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}` };
  const webhookUrl = config.MONITOR_WEBHOOK_URL;
  const webhook = webhookUrl === undefined ? undefined : createWebhook(webhookUrl, logger, () => metrics.webhookFailures.inc());
  const announcedStore = createAnnouncedAlarmStore(db.kysely, alarmsLease);
  const announcedBefore = await announcedAtStart(announcedStore, logger, config.MONITOR_POLL_MS);
  const announcer = alarmAnnouncer({
    vhost,
    logger,
    metrics,
    webhook,
    store: announcedStore,
    holds: () => lease.held(),
    unknown: () => lease.unknown(),
    readTimeoutMs: config.MONITOR_POLL_MS,
  });
  const history = new History(config.MONITOR_HISTORY_MINUTES * 60_000);
  // The monitor must run while RabbitMQ is down (to say so): connect in the background, and until
  // then use the management API's statistics alone.
  let broker: Broker | undefined;
  let connecting: Promise<void> | undefined;
  const live: LiveCounts = async (queues) => {
    if (broker !== undefined) return broker.queueCounts(queues);
    connecting ??= connectBroker({ url: config.AMQP_URL, logger, connectionName: 'herald-monitor', consumes: false })
      .then((b) => void (broker = b))
      .catch((err: unknown) => logger.debug({ err }, 'monitor: no AMQP connection for live queue counts yet'))
      .finally(() => (connecting = undefined));
    throw new Error('no AMQP connection yet');
  };
  // Overdue by PostgreSQL's clock, which the deschedulers release by, not this host's.
  const clock = startDatabaseClock(db.kysely, { logger });
  const scheduled = startScheduledCounts({
    db,
    now: () => clock.now().getTime(),
    pollMs: config.MONITOR_SCHEDULED_POLL_MS,
    overdueMs: config.MONITOR_SCHEDULED_OVERDUE_S * 1000,
    certificateWarnMs: config.MONITOR_APNS_CERTIFICATE_WARN_DAYS * 86_400_000,
    providerDownForMs: config.MONITOR_PROVIDER_DOWN_GRACE_S * 1000,
    // As long as rabbitmq-unreachable waits: the "*" no-consumer delay.
    unreachableForMs: config.MONITOR_THRESHOLDS.for('*').noConsumerForMs,
    metrics,
    logger,
  });
  const monitor = startQueueMonitor({
    api: createManagementApi(config.RABBITMQ_API_URL, { log: logger }),
    live,
    vhost,
    pollMs: config.MONITOR_POLL_MS,
    thresholds: config.MONITOR_THRESHOLDS,
    pushesPerMessage: pushesPerMessage(config.PUSH_PACK_SIZE),
    expected: WorkQueues,
    history,
    metrics,
    logger,
    otherConditions: scheduled.conditions,
    announced: announcedBefore,
    // One of those is taken as ended once this instance has read what the announcer would say it ended by.
    seen: (alarm, now) => seenSince(alarm, 0, evidence(), now),
    announce: announcer.announce,
    afterPoll: () => void announcer.reconcile(alarmView()),
  });
  // After the monitor (its first poll answers later, so nothing asks the lease before this). A blind
  // monitor stands by: it leaves the announcing to one that sees RabbitMQ, and keeps or takes it
  // while none does (rabbitmq-unreachable must still be said).
  const lease = holdLease(db.kysely, {
    ...alarmsLease,
    ttlMs: ALARMS_LEASE_MS,
    logger,
    standBy: () => monitor.blind(),
    onChange: (held) => {
      metrics.leaseHeld.set(held ? 1 : 0);
      announcer.leaseChanged(held ? Date.now() : undefined);
    },
  });
  /** When this instance last read each source (alarm-announcer.ts). */
  function evidence(): Evidence {
    const at = monitor.state().at;
    return {
      polledAt: at === null ? 0 : Date.parse(at),
      pollingSince: monitor.pollingSince(),
      readAt: scheduled.readAt(),
      parkedWindowMs: (queue: string) => config.MONITOR_THRESHOLDS.for(queue).parkedWindowMs,
      oldestAgeWindowMs: (queue: string) => oldestAgeWindowMs(config.MONITOR_THRESHOLDS.for(queue)),
    };
  }
  /** What this instance sees, for the lease holder's round (alarm-announcer.ts). */
  function alarmView(): AlarmView {
    const now = Date.now();
    const seen = evidence();
    return { now, active: monitor.state().alarms, holds: monitor.holds, seen: (alarm, since) => seenSince(alarm, since, seen, now) };
  }
  logger.info({ vhost, pollMs: config.MONITOR_POLL_MS, webhook: webhookUrl !== undefined }, 'watching every Herald queue');
  return {
    http: dashboardRoutes({
      page,
      loginPage: LOGIN_PAGE,
      gate: createOperatorGate(db.apiKeys, OPERATOR_KEY_CACHE_TTL_MS, logger),
      audit: db.audit,
      monitor,
      history,
      scheduled: scheduled.current,
      fanouts: cachedRunningFanouts(createFanoutRepository(db.kysely)),
      amqpUrl: config.AMQP_URL,
      // Held by another (a CLI's replay may take minutes): answered 409 at once, not after a wait
      // that would hold this monitor's other parked requests behind it.
      parkedLease: (queue, work) => withParkedLease(db.kysely, parkedNameOf(queue), `the dashboard of the monitor on ${alarmsLease.holder}`, work, { waitMs: 0 }),
      replayedOutcomes: () => startReplayedOutcomes(db.kysely),
      logger,
    }),
    stop: async (timeoutMs) => {
      await monitor.stop();
      // The announcer's last round ends; what is left to post is delivered within a quarter of
      // the stop time while the reads of the store end; then the announced alarms' last writes
      // land and the alarms lease is given back (another monitor takes over announcing now, not
      // when the lease expires, and reads what this one said). Each is waited for no longer than
      // its share (a PostgreSQL out of reach could hold them past the stop's guard, which ends
      // the process).
      await within(announcer.stop(), timeoutMs / 4);
      const draining = webhook?.drain(timeoutMs / 4);
      await within(scheduled.stop(), timeoutMs / 4);
      clock.stop();
      await draining;
      await within(announcer.flush(), timeoutMs / 4);
      await within(lease.stop(), timeoutMs / 8);
      await db.close();
      await connecting;
      await broker?.close();
    },
  };
});
