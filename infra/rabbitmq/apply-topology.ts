/**
 * Declares Herald's exchanges, queues and bindings. Idempotent: run it on every deploy. Tries again
 * for a minute while RabbitMQ cannot be reached or drops the connection; fails at once on what it refuses.
 *   AMQP_URL=amqp://… (or AMQP_URLS) HERALD_RETRY_DELAYS_MS=1000,5000,30000 npx tsx infra/rabbitmq/apply-topology.ts
 */
import { commonConfig, loadConfigOrExit, retryScheduleConfig } from '@herald/config';
import { createLogger } from '@herald/logging';
import { applyTopologyWhenReachable, heraldTopology } from '@herald/messaging';

// The services' own settings (AMQP_URLS for a cluster's nodes, as AMQP_URL), each checked and named when wrong.
const config = loadConfigOrExit(
  {
    AMQP_URL: commonConfig.AMQP_URL,
    LOG_LEVEL: commonConfig.LOG_LEVEL,
    LOG_FORMAT: commonConfig.LOG_FORMAT,
    ...retryScheduleConfig,
  },
  process.env,
);
const logger = createLogger({ service: 'apply-topology', level: config.LOG_LEVEL, format: config.LOG_FORMAT });
const retryDelaysMs = config.HERALD_RETRY_DELAYS_MS;
const url = config.AMQP_URL;

try {
  const topology = heraldTopology({ retryDelaysMs });
  await applyTopologyWhenReachable({ url, logger, topology, connectionName: 'herald-apply-topology' });
  logger.info({ exchanges: topology.exchanges.length, queues: topology.queues.length, retryDelaysMs }, 'topology applied');
} catch (err) {
  logger.fatal({ err }, 'applying topology failed');
  process.exit(1);
}
