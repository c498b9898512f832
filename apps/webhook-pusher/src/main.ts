import { hostname } from 'node:os';
import { Queues } from '@herald/contracts';
import { loadConfigOrExit } from '@herald/config';
import { createDatabase, databaseOptionsOf, deferWhileDatabaseUnavailable, refusedValueReason } from '@herald/db';
import { capRequestTimeout, checkLedgerRetention, createPusherLimiter, createPusherMetrics, ledgerTimeoutOf, providerLimits, startLedgerPruner } from '@herald/delivery';
import { connectBroker } from '@herald/messaging';
import { runService, stopBy } from '@herald/runtime';
import { webhookPusherConfig } from './config.ts';
import { HostSlots } from './host-slots.ts';
import { createSubscriptionCache } from './subscription-cache.ts';
import { createWebhookMetrics } from './webhook-metrics.ts';
import { createWebhookPusherHandler, webhookParkCounter } from './webhook-pusher.ts';
import { createWebhookSender } from './webhook-sender.ts';

const config = loadConfigOrExit(webhookPusherConfig);
const name = 'webhook-pusher';

await runService(name, config, async ({ logger, registry, stopping: startStopping, waiting }) => {
  checkLedgerRetention(config.LEDGER_RETENTION_HOURS * 3_600_000, config.LEDGER_LEASE_MS, config.PUSHER_RETRY_DELAYS_MS);
  const db = createDatabase({ ...databaseOptionsOf(config), logger, ledgerTimeoutMs: ledgerTimeoutOf(config.LEDGER_LEASE_MS) });
  // Not ready until the schema holds what this release reads (prepare may not have run yet).
  await db.untilMigrated({ signal: startStopping, onWaiting: waiting });
  const broker = await connectBroker({ url: config.AMQP_URL, logger, connectionName: name, metrics: registry });
  const { limiter, close: closeLimiter } = await createPusherLimiter('webhook', config, logger, registry);
  // Like the device pushers: a POST must end well inside its ledger claim.
  const timeoutMs = capRequestTimeout({ requestTimeoutMs: config.WEBHOOK_TIMEOUT_MS }, providerLimits(config.LEDGER_LEASE_MS), logger).requestTimeoutMs;
  const sender = createWebhookSender({ timeoutMs, bodyLimitBytes: config.WEBHOOK_RESPONSE_BODY_LIMIT_BYTES, allowLoopback: config.WEBHOOK_ALLOW_HTTP_LOCALHOST });
  const subscriptions = createSubscriptionCache(db.subscriptions, config.WEBHOOK_SUBSCRIPTION_CACHE_TTL_MS);
  const stopping = new AbortController();
  const recordingStop = new AbortController();
  const metrics = createPusherMetrics(registry);
  const handle = createWebhookPusherHandler({
    subscriptions,
    tracking: { store: db.subscriptions, disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS, lastAttempt: config.PUSHER_RETRY_DELAYS_MS.length + 1 },
    sender,
    slots: new HostSlots({
      perHost: config.WEBHOOK_MAX_PER_HOST,
      maxQueued: config.WEBHOOK_MAX_QUEUED_PER_HOST,
      maxQueuedWhenSlow: config.WEBHOOK_MAX_QUEUED_PER_SLOW_HOST,
    }),
    ledger: db.ledger,
    metrics,
    webhookMetrics: createWebhookMetrics(registry),
    logger,
    owner: `${name}@${hostname()}:${process.pid}`,
    leaseMs: config.LEDGER_LEASE_MS,
    signal: stopping.signal,
    recordingStop: recordingStop.signal,
    ...(limiter !== undefined && { limiter }),
  });
  const consumer = await broker.consume({
    queue: Queues.webhookSend,
    prefetch: config.PUSHER_PREFETCH,
    batch: { maxSize: config.PUSHER_BATCH_SIZE, maxWaitMs: config.PUSHER_BATCH_WAIT_MS },
    retryDelaysMs: config.PUSHER_RETRY_DELAYS_MS,
    handle,
    messageError: refusedValueReason,
    deferOn: deferWhileDatabaseUnavailable,
    // Every park counted, retries that ran out included (the handler's own parks too, once confirmed).
    onParked: webhookParkCounter(subscriptions, metrics),
  });
  const pruner = startLedgerPruner({ ledger: db.ledger, intervalMs: config.LEDGER_PRUNE_INTERVAL_MS, retentionMs: config.LEDGER_RETENTION_HOURS * 3_600_000, logger, registry });
  return {
    ready: () => broker.health(),
    stop: async (timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      // Deliveries waiting for budget or a host slot give up at once (deferred).
      stopping.abort();
      // No delivery is taken from here on; those already made are recorded for as long as the
      // shutdown's bound allows, no longer. Pruning and the limiter stop meanwhile, neither past the bound.
      await Promise.all([
        consumer.stop(timeoutMs),
        stopBy(deadline, 'ledger pruner', pruner.stop(), logger),
        stopBy(deadline, 'rate limiter', closeLimiter(), logger),
      ]);
      recordingStop.abort();
      sender.close();
      await broker.close();
      await db.close();
    },
  };
});
