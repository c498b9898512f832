import type { ApnsCertificateExpiry } from '@herald/db';
import type { AlarmCondition } from '@herald/monitoring';

const DAY_MS = 86_400_000;

/** The pseudo-queue an app's certificate alarm names: `app.<id>`. */
export const appQueueOf = (app: string): string => `app.${app}`;

const rotation = (app: string): string =>
  `renew it in the Apple Developer account and rotate it in (herald apps rotate ${app} --apns-cert-file … --apns-cert-key-file …, or PUT /admin/apps/${app}/credentials; the app keeps its endpoint), or move the app to a .p8 signing key, which does not expire`;

/** "in 12 days", "in 5 hours": how long until `leftMs` has passed. */
const inTime = (leftMs: number): string => {
  const days = Math.floor(leftMs / DAY_MS);
  if (days >= 1) return `in ${days === 1 ? '1 day' : `${days} days`}`;
  const hours = Math.max(1, Math.floor(leftMs / 3_600_000));
  return `in ${hours === 1 ? '1 hour' : `${hours} hours`}`;
};

/**
 * The certificate alarms' conditions, per enabled app with an APNs client certificate:
 * apns-certificate-expiring while it expires within `warnMs` or has expired, and beside it
 * apns-certificate-expired once it has (an alarm of its own, so its firing is said even where
 * the warning was seen weeks before). Apple refuses an expired one in the TLS handshake and the
 * pushers refuse to send with it, so every APNs push of the app fails; a new one needs a person
 * with the app's Apple Developer account, so it is said days ahead. `value` is the whole days
 * left (negative: the whole days since it expired), `threshold` the warning's days.
 */
export function certificateConditions(certificates: readonly ApnsCertificateExpiry[], now: number, warnMs: number): AlarmCondition[] {
  const threshold = Math.round(warnMs / DAY_MS);
  return certificates
    .filter((c) => c.expiresAt.getTime() - now <= warnMs)
    .flatMap((c) => {
      const leftMs = c.expiresAt.getTime() - now;
      const value = Math.trunc(leftMs / DAY_MS);
      const when = c.expiresAt.toISOString();
      const queue = appQueueOf(c.app);
      if (leftMs > 0) {
        const summary = `app "${c.app}"'s APNs certificate expires on ${when}, ${inTime(leftMs)}: then every APNs push of the app is refused; ${rotation(c.app)}`;
        return [{ alarm: 'apns-certificate-expiring' as const, queue, forMs: 0, value, threshold, summary }];
      }
      const summary = `app "${c.app}"'s APNs certificate expired on ${when}: every APNs push of the app is refused; ${rotation(c.app)}`;
      return [
        { alarm: 'apns-certificate-expiring' as const, queue, forMs: 0, value, threshold, summary },
        { alarm: 'apns-certificate-expired' as const, queue, forMs: 0, value, threshold: 0, summary },
      ];
    });
}
