/**
 * `docker run herald prepare`: apply the RabbitMQ topology and the database migrations (both
 * idempotent) and exit, before the services start (compose.yaml runs it once per `up`).
 * HERALD_DEMO_APP=true also creates the app `demo`, as `npm start` does.
 */
import { bool, commonConfig, loadConfigOrExit, retryScheduleConfig } from '@herald/config';
import { createLogger } from '@herald/logging';
import { prepareEnvironment } from '../local/prepare.ts';

const config = loadConfigOrExit(
  {
    AMQP_URL: commonConfig.AMQP_URL,
    DATABASE_URL: commonConfig.DATABASE_URL,
    DATABASE_SCHEMA: commonConfig.DATABASE_SCHEMA,
    LOG_LEVEL: commonConfig.LOG_LEVEL,
    LOG_FORMAT: commonConfig.LOG_FORMAT,
    ...retryScheduleConfig,
    HERALD_DEMO_APP: bool('Create the app demo (APNs topic com.herald.demo) if it is missing', { default: 'false' }),
  },
  process.env,
);
const logger = createLogger({ service: 'herald-prepare', level: config.LOG_LEVEL, format: config.LOG_FORMAT });
try {
  await prepareEnvironment({
    amqpUrl: config.AMQP_URL,
    databaseUrl: config.DATABASE_URL,
    schema: config.DATABASE_SCHEMA,
    retryDelaysMs: config.HERALD_RETRY_DELAYS_MS,
    logger,
    seedApps: config.HERALD_DEMO_APP ? [{ id: 'demo', apnsTopic: 'com.herald.demo' }] : [],
  });
  logger.info('topology and migrations applied');
} catch (err) {
  logger.fatal({ err }, 'prepare failed');
  process.exit(1);
}
