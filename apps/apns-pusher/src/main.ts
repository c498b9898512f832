import { loadConfig } from '@herald/config';
import { runPusher } from '@herald/delivery';
import { createApnsProvider } from '@herald/providers';
import { apnsSettings } from './apns-settings.ts';
import { apnsPusherConfig } from './config.ts';

const config = loadConfig(apnsPusherConfig, process.env);

await runPusher('apns', config, async (logger) => {
  const settings = await apnsSettings(config);
  logger.info({ address: settings.address, port: settings.port, auth: settings.auth.kind }, 'APNs endpoint');
  return createApnsProvider(settings, logger);
});
