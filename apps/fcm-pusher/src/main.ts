import { loadConfig } from '@herald/config';
import { runPusher } from '@herald/delivery';
import { createFcmProvider } from '@herald/providers';
import { fcmPusherConfig } from './config.ts';
import { fcmSettings } from './fcm-settings.ts';

const config = loadConfig(fcmPusherConfig, process.env);

await runPusher('fcm', config, async (logger) => {
  const settings = await fcmSettings(config);
  logger.info({ projectId: settings.projectId, sandbox: settings.endpoint !== undefined }, 'FCM endpoint');
  return createFcmProvider(settings, logger);
});
