import { loadConfigOrExit } from '@herald/config';
import { capRequestTimeout, runPusher } from '@herald/delivery';
import { createFcmProvider, createUncredentialedProvider } from '@herald/providers';
import { fcmPusherConfig } from './config.ts';
import { fcmSettings } from './fcm-settings.ts';

const config = loadConfigOrExit(fcmPusherConfig);

await runPusher('fcm', config, async (logger, limits) => {
  const own = await fcmSettings(config);
  if (own === undefined) {
    logger.warn('no process-level FCM credentials (FCM_APP_CREDENTIALS_ONLY): apps send with their own; pushes of an app without them are parked');
    return createUncredentialedProvider('fcm', 'FCM_SERVICE_ACCOUNT_FILE');
  }
  const settings = capRequestTimeout(own, limits, logger);
  const endpoint = settings.endpoint && `${settings.endpoint.host}:${settings.endpoint.port}`;
  const via = settings.proxy && `${settings.proxy.host}:${settings.proxy.port}`;
  logger.info({ projectId: settings.projectId, endpoint: endpoint ?? 'fcm.googleapis.com:443', ca: settings.endpoint?.ca !== undefined, proxy: via }, 'FCM endpoint');
  return createFcmProvider(settings, logger, limits.now);
});
