import { loadConfigOrExit } from '@herald/config';
import { capRequestTimeout, runPusher } from '@herald/delivery';
import { createApnsProvider } from '@herald/providers';
import { apnsSettings } from './apns-settings.ts';
import { apnsPusherConfig } from './config.ts';

const config = loadConfigOrExit(apnsPusherConfig);

await runPusher('apns', config, async (logger, limits) => {
  const settings = capRequestTimeout(await apnsSettings(config), limits, logger);
  const via = settings.proxy && `${settings.proxy.host}:${settings.proxy.port}`;
  logger.info({ address: settings.address, port: settings.port, auth: settings.auth.kind, ca: settings.ca !== undefined, proxy: via }, 'APNs endpoint');
  return createApnsProvider(settings, logger);
});
