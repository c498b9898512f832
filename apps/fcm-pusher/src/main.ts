import { loadConfigOrExit } from '@herald/config';
import { capRequestTimeout, runPusher } from '@herald/delivery';
import { createFcmProvider } from '@herald/providers';
import { fcmPusherConfig } from './config.ts';
import { fcmSettings } from './fcm-settings.ts';

const config = loadConfigOrExit(fcmPusherConfig);

await runPusher('fcm', config, async (logger, limits) => {
  const settings = capRequestTimeout(await fcmSettings(config), limits, logger);
  const endpoint = settings.endpoint && `${settings.endpoint.host}:${settings.endpoint.port}`;
  const via = settings.proxy && `${settings.proxy.host}:${settings.proxy.port}`;
  logger.info({ projectId: settings.projectId, endpoint: endpoint ?? 'fcm.googleapis.com:443', ca: settings.endpoint?.ca !== undefined, proxy: via }, 'FCM endpoint');
  return createFcmProvider(settings, logger);
});
