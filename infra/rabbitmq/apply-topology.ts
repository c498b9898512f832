/**
 * Declares Herald's exchanges, queues and bindings. Idempotent: run it on every deploy. Tries again
 * for a minute while RabbitMQ cannot be reached or drops the connection; fails at once on what it refuses.
 *   AMQP_URL=amqp://… HERALD_RETRY_DELAYS_MS=1000,5000,30000 npx tsx infra/rabbitmq/apply-topology.ts
 */
import { createLogger } from '@herald/logging';
import { applyTopologyWhenReachable, heraldTopology } from '@herald/messaging';

const url = process.env['AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672/';
const delaysRaw = process.env['HERALD_RETRY_DELAYS_MS'] ?? '1000,5000,30000,120000,600000';
const retryDelaysMs = delaysRaw.split(',').map((s) => Number(s.trim()));
const logger = createLogger({ service: 'apply-topology', format: 'auto' });

if (retryDelaysMs.some((d) => !Number.isInteger(d) || d <= 0)) {
  logger.fatal({ HERALD_RETRY_DELAYS_MS: delaysRaw }, 'HERALD_RETRY_DELAYS_MS must be comma-separated positive integers');
  process.exit(1);
}

try {
  const topology = heraldTopology({ retryDelaysMs });
  await applyTopologyWhenReachable({ url, logger, topology, connectionName: 'herald-apply-topology' });
  logger.info({ exchanges: topology.exchanges.length, queues: topology.queues.length, retryDelaysMs }, 'topology applied');
} catch (err) {
  logger.fatal({ err }, 'applying topology failed');
  process.exit(1);
}
