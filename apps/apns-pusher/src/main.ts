import { loadConfigOrExit } from '@herald/config';
import { capRequestTimeout, runPusher } from '@herald/delivery';
import { apnsCertificateValidity } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import { createApnsProvider, createUncredentialedProvider, type ApnsSettings } from '@herald/providers';
import { apnsSettings } from './apns-settings.ts';
import { apnsPusherConfig } from './config.ts';

const config = loadConfigOrExit(apnsPusherConfig);
const WARN_AHEAD_MS = 30 * 86_400_000;

/**
 * The pushers' own certificate (APNS_CERT_FILE) is not in the database, so the monitor's
 * apns-certificate-expiring alarm cannot see it: said at start when it expires within 30 days.
 * Once expired, every push sent with it is refused as its apps' credentials (apns-provider.ts).
 */
function warnOfCertificateExpiry(auth: ApnsSettings['auth'], logger: Logger): void {
  const validity = auth.kind === 'certificate' ? apnsCertificateValidity(auth.cert) : undefined;
  if (validity === undefined || validity.untilMs - Date.now() > WARN_AHEAD_MS) return;
  const expiresAt = new Date(validity.untilMs).toISOString();
  logger.warn({ file: auth.kind === 'certificate' ? auth.file : undefined, expiresAt }, `the APNs certificate in APNS_CERT_FILE expires (or expired) on ${expiresAt}: renew it, replace the file and restart the apns-pushers; APNs refuses every push sent with an expired one`);
}

await runPusher('apns', config, async (logger, limits) => {
  const own = await apnsSettings(config);
  if (own === undefined) {
    logger.warn('no process-level APNs credentials (APNS_APP_CREDENTIALS_ONLY): apps send with their own; pushes of an app without them are parked');
    return createUncredentialedProvider('apns', 'APNS_KEY_FILE with APNS_KEY_ID and APNS_TEAM_ID, or APNS_CERT_FILE with APNS_CERT_KEY_FILE');
  }
  const settings = capRequestTimeout(own, limits, logger);
  const via = settings.proxy && `${settings.proxy.host}:${settings.proxy.port}`;
  logger.info({ address: settings.address, port: settings.port, auth: settings.auth.kind, ca: settings.ca !== undefined, proxy: via }, 'APNs endpoint');
  warnOfCertificateExpiry(settings.auth, logger);
  return createApnsProvider(settings, logger);
});
