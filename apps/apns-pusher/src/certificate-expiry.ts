import { apnsCertificateValidity } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import type { ApnsSettings } from '@herald/providers';
import { Gauge, type Registry } from '@herald/runtime';

/** The start-up warning's lead: as the HeraldApnsProcessCertificateExpiring rule's warning. */
const WARN_AHEAD_MS = 30 * 86_400_000;

/**
 * The pushers' own certificate (APNS_CERT_FILE) is not in the database, so the monitor's
 * apns-certificate-expiring alarm cannot see it. Exported as
 * `herald_apns_process_certificate_expiry_timestamp_seconds` (as the monitor exports the apps' own,
 * `herald_apns_certificate_expiry_timestamp_seconds{app}`) for the HeraldApnsProcessCertificateExpiring
 * rule, and said at start when it expires within 30 days. Once expired, every push sent with it is
 * refused as its apps' credentials (apns-provider.ts). Token auth, or no process credentials: no
 * series at all (a gauge without labels would otherwise read 0, expired since 1970).
 */
export function exportCertificateExpiry(
  auth: ApnsSettings['auth'],
  registry: Registry,
  logger: Logger,
  nowMs = Date.now(),
): void {
  if (auth.kind !== 'certificate') return;
  const validity = apnsCertificateValidity(auth.cert);
  if (validity === undefined) return;
  const gauge = new Gauge({
    name: 'herald_apns_process_certificate_expiry_timestamp_seconds',
    help: 'When the APNs client certificate this pusher sends with for apps without credentials of their own (APNS_CERT_FILE) expires, epoch seconds; read at start',
    registers: [registry],
  });
  gauge.set(validity.untilMs / 1000);
  if (validity.untilMs - nowMs > WARN_AHEAD_MS) return;
  const expiresAt = new Date(validity.untilMs).toISOString();
  logger.warn(
    { file: auth.file, expiresAt },
    `the APNs certificate in APNS_CERT_FILE expires (or expired) on ${expiresAt}: renew it, replace the file and restart the apns-pushers; APNs refuses every push sent with an expired one`,
  );
}
