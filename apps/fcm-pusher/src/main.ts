import { loadConfig } from '@herald/config';
import { capRequestTimeout, runPusher } from '@herald/delivery';
import { createFcmProvider } from '@herald/providers';
import { fcmPusherConfig } from './config.ts';
import { fcmSettings } from './fcm-settings.ts';

const config = loadConfig(fcmPusherConfig, process.env);

await runPusher('fcm', config, async (logger, limits) => {
  const settings = capRequestTimeout(await fcmSettings(config), limits, logger);
  logger.info({ projectId: settings.projectId, sandbox: settings.endpoint !== undefined }, 'FCM endpoint');
  return createFcmProvider(settings, logger);
});
