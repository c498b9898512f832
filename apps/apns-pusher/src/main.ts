import { loadConfigOrExit } from '@herald/config';
import { capRequestTimeout, nowMs, runPusher } from '@herald/delivery';
import { createApnsProvider, createUncredentialedProvider } from '@herald/providers';
import { apnsSettings } from './apns-settings.ts';
import { exportCertificateExpiry } from './certificate-expiry.ts';
import { apnsPusherConfig } from './config.ts';

const config = loadConfigOrExit(apnsPusherConfig);

// The credentials are read once, here: a replaced APNS_CERT_FILE takes a restart, which exports its expiry anew.
await runPusher('apns', config, async (logger, limits, registry) => {
  const own = await apnsSettings(config);
  if (own === undefined) {
    logger.warn('no process-level APNs credentials (APNS_APP_CREDENTIALS_ONLY): apps send with their own; pushes of an app without them are parked');
    return createUncredentialedProvider('apns', 'APNS_KEY_FILE with APNS_KEY_ID and APNS_TEAM_ID, or APNS_CERT_FILE with APNS_CERT_KEY_FILE');
  }
  const settings = capRequestTimeout(own, limits, logger);
  const via = settings.proxy && `${settings.proxy.host}:${settings.proxy.port}`;
  logger.info({ address: settings.address, port: settings.port, auth: settings.auth.kind, ca: settings.ca !== undefined, proxy: via }, 'APNs endpoint');
  exportCertificateExpiry(settings.auth, registry, logger);
  // The certificate's dates judged by the pusher's clock (PostgreSQL's), as expiries are.
  return createApnsProvider(settings, logger, nowMs(limits.now));
});
