import { createHash } from 'node:crypto';
import { WEB_PUSH_MAX_PLAINTEXT_BYTES, WebPushUrgencies, webPushTopicTakenEverywhere, type DevicePush, type WebPushUrgency } from '@herald/contracts';
import { HERALD_MAX_STORAGE_S } from './apns-rules.ts';

/**
 * The Web Push rules (RFC 8030 delivery, RFC 8291 aes128gcm, RFC 8292 VAPID), rows in
 * PROVIDER-RULES.md "Web Push", each pinned by web-rules.spec.ts.
 */

/** RFC 8030 §5.2 leaves the TTL to the sender; Herald's choice: 28 days without an expiry, as for APNs and FCM. */
export const WEB_PUSH_DEFAULT_TTL_S = HERALD_MAX_STORAGE_S;

/** RFC 8030 §5.2 TTL: 0 for now-or-never, the whole seconds left until expiresAt (at most 28 days), else 28 days. */
export function webTtlSeconds(push: Pick<DevicePush, 'nowOrNever' | 'expiresAt'>, now: Date): number {
  if (push.nowOrNever === true) return 0;
  if (push.expiresAt === undefined) return WEB_PUSH_DEFAULT_TTL_S;
  return Math.min(WEB_PUSH_DEFAULT_TTL_S, Math.max(0, Math.floor((Date.parse(push.expiresAt) - now.getTime()) / 1000)));
}

/** RFC 8030 §5.3 Urgency: `content.web.urgency`, else the job's priority (high → high, normal → normal). */
export function webUrgency(push: Pick<DevicePush, 'priority' | 'content'>): WebPushUrgency {
  return push.content.web?.urgency ?? (push.priority === 'high' ? 'high' : 'normal');
}

/**
 * RFC 8030 §5.4 Topic (at most 32 characters of the URL-safe base64 alphabet): `content.web.topic`,
 * else the collapse key, as it is when every push service is known to take it
 * (webPushTopicTakenEverywhere: a length that is a multiple of 4; Apple's refuses 1, 5, 9 … 29),
 * else (Herald's choice) the first 32 characters of its
 * base64url SHA-256: the same key always gives the same topic, so a newer push still replaces an
 * undelivered older one. The Topic only decides that replacement; the service worker never sees it.
 */
export function webTopic(push: Pick<DevicePush, 'collapseKey' | 'content'>): string | undefined {
  const key = push.content.web?.topic ?? push.collapseKey;
  if (key === undefined) return undefined;
  return webPushTopicTakenEverywhere(key) ? key : createHash('sha256').update(key, 'utf8').digest('base64url').slice(0, 32);
}

/** What Herald hands the push service for one push (before encryption). */
export interface WebPushRequest {
  /** The JSON text encrypted as the message body (web-payload.ts). */
  plaintext: string;
  ttl: number;
  urgency: WebPushUrgency;
  topic?: string;
}

/** The push service's rules for one request, or undefined: checked at the doors and before each send. */
export function webRequestProblem(r: WebPushRequest): string | undefined {
  const bytes = Buffer.byteLength(r.plaintext, 'utf8');
  if (bytes > WEB_PUSH_MAX_PLAINTEXT_BYTES) {
    return `payload is ${bytes} bytes; Web Push allows ${WEB_PUSH_MAX_PLAINTEXT_BYTES} bytes of JSON (4,096 bytes once encrypted with aes128gcm, RFC 8291)`;
  }
  if (r.topic !== undefined && !webPushTopicTakenEverywhere(r.topic)) {
    return "topic must be 1–32 characters of the URL-safe base64 alphabet (RFC 8030 §5.4), a multiple of 4 of them (Apple's push service refuses 1, 5, 9 …: BadWebPushTopic)";
  }
  if (!WebPushUrgencies.includes(r.urgency)) return `urgency must be one of ${WebPushUrgencies.join(', ')} (RFC 8030 §5.3)`;
  if (!Number.isInteger(r.ttl) || r.ttl < 0) return 'TTL must be a whole number of seconds, at least 0 (RFC 8030 §5.2)';
  return undefined;
}
