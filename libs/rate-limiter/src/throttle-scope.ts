/** What a provider answered, as far as pacing cares (structurally a @herald/providers SendResult). */
export interface ProviderAnswer {
  kind: string;
  reason?: string;
  retryAfterMs?: number;
  /** The provider's HTTP status, where its classifier keeps it (FCM's transient answers). */
  httpStatus?: number;
}

/**
 * Whom a throttle without Retry-After is about, by the provider's own documentation:
 * - `device`: APNs 429 TooManyRequests ("too many requests were made consecutively to the same
 *   device token") and FCM device-message-rate-exceeded. Slowing anything else down would punish
 *   every other device for one chatty one; the push itself retries with back-off.
 * - `app`: FCM QUOTA_EXCEEDED (firebase-admin: message-rate-exceeded) and any other FCM 429, by
 *   its status (one without FCM's own error detail reads RESOURCE_EXHAUSTED): the sending quota of
 *   the app's Firebase project. And Microsoft's push service's 406 (`WnsThrottled`, web-classify.ts:
 *   "the cloud service exceeded its throttle limit"): the sender's, at that push service.
 * - `platform`: APNs 503 ServiceUnavailable, FCM UNAVAILABLE / HTTP 503: the provider is
 *   overloaded, whoever sends.
 */
export type ThrottleScope = 'device' | 'app' | 'platform';

const DEVICE = /^TooManyRequests\b|device-message-rate-exceeded/;
const APP = /QUOTA_EXCEEDED|message-rate-exceeded|HTTP 429|^WnsThrottled\b/;
const PLATFORM = /ServiceUnavailable|\bUNAVAILABLE\b|server-unavailable|HTTP 503/;

/** Pure: the scope of a throttle answer, or undefined when the answer is not a throttle. */
export function throttleScope(answer: ProviderAnswer): ThrottleScope | undefined {
  const reason = answer.reason ?? '';
  if (answer.kind !== 'transient' || reason.startsWith('transport:')) return undefined;
  if (DEVICE.test(reason)) return 'device';
  if (answer.httpStatus === 429 || APP.test(reason)) return 'app';
  if (PLATFORM.test(reason)) return 'platform';
  return undefined;
}

export const isThrottle = (answer: ProviderAnswer): boolean => throttleScope(answer) !== undefined;

/** Pure: how long the answer asks the app to hold back (a Retry-After on a transient answer), else 0. */
export function pauseAsked(answer: ProviderAnswer): number {
  if (answer.kind !== 'transient' || answer.retryAfterMs === undefined || !Number.isFinite(answer.retryAfterMs)) return 0;
  return Math.max(0, answer.retryAfterMs);
}
