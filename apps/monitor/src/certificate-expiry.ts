import type { ApnsCertificateExpiry } from '@herald/db';
import type { AlarmCondition } from '@herald/monitoring';

const DAY_MS = 86_400_000;

/** The pseudo-queue an app's certificate alarm names: `app.<id>`. */
export const appQueueOf = (app: string): string => `app.${app}`;

const rotation = (app: string): string =>
  `renew it in the Apple Developer account and rotate it in (herald apps rotate ${app} --apns-cert-file … --apns-cert-key-file …, or PUT /admin/apps/${app}/credentials), or move the app to a .p8 signing key, which does not expire`;

/**
 * The apns-certificate-expiring alarm's conditions: per enabled app with an APNs client
 * certificate, one that expires within `warnMs` or has expired. Apple refuses an expired one in the
 * TLS handshake and the pushers refuse to send with it, so every APNs push of the app fails; a new
 * one needs a person with the app's Apple Developer account, so it is said days ahead. `value` is
 * the whole days left (negative: the whole days since it expired), `threshold` the warning's days.
 */
export function certificateConditions(certificates: readonly ApnsCertificateExpiry[], now: number, warnMs: number): AlarmCondition[] {
  return certificates
    .filter((c) => c.expiresAt.getTime() - now <= warnMs)
    .map((c) => {
      const leftMs = c.expiresAt.getTime() - now;
      const days = Math.trunc(leftMs / DAY_MS);
      const when = c.expiresAt.toISOString();
      const summary =
        leftMs <= 0
          ? `app "${c.app}"'s APNs certificate expired on ${when}: every APNs push of the app is refused; ${rotation(c.app)}`
          : `app "${c.app}"'s APNs certificate expires on ${when}, in ${days === 1 ? '1 day' : `${days} days`}: then every APNs push of the app is refused; ${rotation(c.app)}`;
      return { alarm: 'apns-certificate-expiring' as const, queue: appQueueOf(c.app), forMs: 0, value: days, threshold: Math.round(warnMs / DAY_MS), summary };
    });
}
