import { loadConfigOrExit } from '@herald/config';
import { createLogger } from '@herald/logging';
import { sandboxConfig } from './config.ts';
import { startSandbox } from './sandbox.ts';

const config = loadConfigOrExit(sandboxConfig);
const logger = createLogger({ service: 'sandbox', level: config.LOG_LEVEL, format: config.LOG_FORMAT });

const sandbox = await startSandbox({
  stateDir: config.SANDBOX_STATE_DIR,
  host: config.SANDBOX_HOST,
  apnsPort: config.SANDBOX_APNS_PORT,
  fcmPort: config.SANDBOX_FCM_PORT,
  webPort: config.SANDBOX_WEB_PORT,
  controlPort: config.SANDBOX_CONTROL_PORT,
  maxRecords: config.SANDBOX_MAX_RECORDS,
  logger,
});
logger.info({ settings: `${config.SANDBOX_STATE_DIR}/sandbox.json`, control: sandbox.settings.control.url }, 'sandbox ready');

let stopping = false;
const stop = (signal: string): void => {
  if (stopping) process.exit(1);
  stopping = true;
  logger.info({ signal }, 'sandbox stopping');
  sandbox.close().then(
    () => process.exit(0),
    (err: unknown) => {
      logger.error({ err }, 'sandbox close failed');
      process.exit(1);
    },
  );
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
