import type { SendResult } from './push-provider.ts';

/** What a push service answered (RFC 8030 §5, §8.3 of RFC 8292), or the transport failure instead. */
export interface WebPushAnswer {
  status: number;
  /** The push message resource (RFC 8030 §5: 201 with Location). */
  location?: string;
  /** Retry-After in milliseconds, when given (429, 503). */
  retryAfterMs?: number;
  /** The push service's explanation, if any (kept short in the reason). */
  body?: string;
}

const MAX_REASON_BODY = 200;

/**
 * A push service saying the signing key is not the subscription's: Apple's push service
 * `{"reason":"VapidPkHashMismatch"}` (400), Mozilla's autopush "VAPID public key mismatch"
 * (401; its errno, 109, is any refused VAPID authentication, so the words decide), FCM's "credentials ... do not correspond to the credentials used to create the subscriptions" (403).
 */
const KEY_MISMATCH = /VapidPkHashMismatch|VAPID public key mismatch|do not correspond to the credentials used to create/i;

function because(answer: WebPushAnswer): string {
  const text = answer.body?.replace(/\s+/g, ' ').trim() ?? '';
  return text.length === 0 ? `HTTP ${answer.status}` : `HTTP ${answer.status}: ${text.slice(0, MAX_REASON_BODY)}`;
}

/**
 * A push service's answer as a SendResult (PROVIDER-RULES.md "Web Push", answers):
 * 2xx delivered; 404/410 the subscription is gone; 429, WNS's 406 and 5xx transient (Retry-After honoured);
 * 401, and 403 saying the JWT is bad (Apple's BadJwtToken, FCM's "invalid JWT"), the VAPID JWT was
 * refused (an app credential problem: counts towards the app's ban); any other 403, the signing key
 * does not match the subscription's applicationServerKey (this subscription's problem, not the
 * app's), and so is a 400 or 401 that says so (Apple's VapidPkHashMismatch, Mozilla's "VAPID public
 * key mismatch"); 413 too large and any other 4xx permanent.
 */
export function classifyWebPushAnswer(answer: WebPushAnswer): SendResult {
  const { status } = answer;
  const retry = answer.retryAfterMs !== undefined ? { retryAfterMs: answer.retryAfterMs } : {};
  if (status >= 200 && status < 300) return { kind: 'delivered', ...(answer.location !== undefined && { providerMessageId: answer.location }) };
  if (status === 404 || status === 410) return { kind: 'dead-token', reason: status === 410 ? 'Gone' : 'NotFound' };
  if (status === 429) return { kind: 'transient', reason: `TooManyRequests: ${because(answer)}`, ...retry };
  // Microsoft's push service (WNS, Edge's endpoints) throttles a sender with 406: "The cloud service
  // exceeded its throttle limit … Reduce the rate at which you are sending notifications" (WNS
  // response codes), with a Retry-After. No other push service documents a 406.
  if (status === 406) return { kind: 'transient', reason: `WnsThrottled: ${because(answer)}`, ...retry };
  if (status >= 500) return { kind: 'transient', reason: `push service error: ${because(answer)}`, ...retry, ...(answer.retryAfterMs === undefined && { outage: true }) };
  if (status >= 400 && status <= 403 && KEY_MISMATCH.test(answer.body ?? '')) {
    return { kind: 'permanent', reason: `VapidKeyMismatch: the subscription belongs to another application server key (${because(answer)})` };
  }
  if (status === 401) return { kind: 'permanent', reason: `VapidUnauthorized: the push service refused the VAPID JWT (${because(answer)})` };
  // 403 is any refused VAPID authentication (RFC 8292 §4.2), not only a key mismatch: Apple's push
  // service answers 403 {"reason":"BadJwtToken"} for a JWT it will not take (a subject it refuses,
  // an expiry too far ahead), FCM "invalid JWT provided"; that is the app's credential, for every push.
  if (status === 403 && /BadJwtToken|invalid JWT/i.test(answer.body ?? '')) {
    return { kind: 'permanent', reason: `VapidUnauthorized: the push service refused the VAPID JWT (${because(answer)})` };
  }
  if (status === 403) return { kind: 'permanent', reason: `VapidKeyMismatch: the subscription belongs to another application server key (${because(answer)})` };
  if (status === 413) return { kind: 'permanent', reason: `PayloadTooLarge: ${because(answer)}` };
  return { kind: 'permanent', reason: `push service refused the request: ${because(answer)}` };
}
