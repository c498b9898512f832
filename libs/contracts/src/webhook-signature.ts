import { createHmac, timingSafeEqual } from 'node:crypto';

/** Headers on every webhook POST. */
export const WebhookHeaders = {
  /** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the subscription secret>` (a second v1 by the previous secret after a rotation) */
  signature: 'herald-signature',
  notificationId: 'herald-notification-id',
  /** 1 on the first try, then 2, 3, … (a retry of the same notification). */
  attempt: 'herald-attempt',
} as const;

/** Default window within which a receiver accepts a signature's timestamp (replay protection). */
export const DEFAULT_SIGNATURE_TOLERANCE_S = 300;

export function signatureOf(secret: string, timestamp: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/**
 * The Herald-Signature header value for this body, signed at `timestamp` (unix seconds); after a
 * secret rotation, with a second v1 by the previous secret (a receiver accepts any v1 that matches).
 */
export function signWebhook(secret: string, timestamp: number, body: string | Buffer, previousSecret?: string): string {
  const previous = previousSecret === undefined ? '' : `,v1=${signatureOf(previousSecret, timestamp, body)}`;
  return `t=${timestamp},v1=${signatureOf(secret, timestamp, body)}${previous}`;
}

export type SignatureCheck = { ok: true; timestamp: number } | { ok: false; reason: string };

/**
 * What a receiver does: parse the header, recompute the HMAC over the raw body bytes, compare in
 * constant time, and refuse timestamps outside the tolerance (a replayed old request).
 */
export function verifyWebhookSignature(
  header: string | undefined,
  body: string | Buffer,
  secret: string,
  options: { toleranceS?: number; nowS?: number } = {},
): SignatureCheck {
  if (header === undefined || header.length === 0) return { ok: false, reason: 'no Herald-Signature header' };
  const parts = new Map<string, string[]>();
  for (const item of header.split(',')) {
    const [k, v] = item.trim().split('=', 2);
    if (k !== undefined && v !== undefined) parts.set(k, [...(parts.get(k) ?? []), v]);
  }
  const t = Number(parts.get('t')?.[0]);
  if (!Number.isInteger(t)) return { ok: false, reason: 'no timestamp (t=) in the signature header' };
  const nowS = options.nowS ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceS ?? DEFAULT_SIGNATURE_TOLERANCE_S;
  if (Math.abs(nowS - t) > tolerance) return { ok: false, reason: `timestamp ${t} is outside the ${tolerance} s tolerance` };
  const expected = Buffer.from(signatureOf(secret, t, body), 'hex');
  const match = (parts.get('v1') ?? []).some((sig) => {
    const given = Buffer.from(sig, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return match ? { ok: true, timestamp: t } : { ok: false, reason: 'signature does not match' };
}
