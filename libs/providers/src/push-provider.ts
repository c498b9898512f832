import type { DevicePush, Platform } from '@herald/contracts';

/** What became of one push, as a value: the pusher turns it into ack / invalidate / retry / park. */
export type SendResult =
  | { kind: 'delivered'; providerMessageId?: string }
  /**
   * APNs 410 Unregistered (with its timestamp), 400 BadDeviceToken / DeviceTokenNotForTopic; FCM
   * UNREGISTERED, invalid registration token, SENDER_ID_MISMATCH; Web Push 404/410.
   * `unlessAppFails`: the answer says the token does not go with the app's credentials, topic or
   * APNs environment (BadDeviceToken, DeviceTokenNotForTopic, SENDER_ID_MISMATCH). That is the
   * token's fault only while the app's other pushes go through; when none was delivered lately, the
   * app's settings are the suspect and the pusher keeps the token (app-ban.ts). `notSent`: as
   * the permanent one's.
   */
  | { kind: 'dead-token'; reason: string; invalidSince?: Date; unlessAppFails?: true; notSent?: true }
  /** APNs 429/500/503, FCM UNAVAILABLE / INTERNAL / QUOTA_EXCEEDED, Web Push 429/5xx, timeouts, connection resets. */
  /**
   * `retryAfterMs`: the provider's Retry-After (it also pauses the app, ADR 0006). `retryNotBeforeMs`:
   * the least delay the provider's documents ask before this push is tried again, pausing nothing
   * else, where they ask exponential back-off from it (FCM QUOTA_EXCEEDED without Retry-After: a
   * minute): the pusher doubles it for each attempt already spent. `httpStatus`: the provider's HTTP
   * status, where the classifier keeps it (FCM): an FCM 429 is about its project's quota whatever its
   * reason reads (throttle-scope.ts). `serverError`: an APNs 5xx, which Apple asks not to be tried
   * again for 15 minutes ("After 15 minutes, you can retry JSON payloads that receive response status
   * codes that begin with 5XX"): the pusher waits its serverErrorRetryMs before each such attempt.
   * `outage`: the answer says nothing about this push, its token or its app: no answer at all (a
   * timeout, a connection refused or reset, a TLS failure) or the provider's server error without a
   * Retry-After. Many of them in a row mean the provider, or the way to it, is down (provider-lanes.ts).
   */
  | { kind: 'transient'; reason: string; retryAfterMs?: number; retryNotBeforeMs?: number; httpStatus?: number; serverError?: true; outage?: true }
  /**
   * Payload too large, bad topic, bad credentials, other 4xx. `notSent`: refused by Herald before
   * any request reached the provider (a message it would refuse, a key this process does not hold,
   * an endpoint whose address is not public): it says nothing of the provider or the way to it, so
   * a provider lane neither counts it as answered nor ends a trial on it (provider-lanes.ts).
   */
  | { kind: 'permanent'; reason: string; notSent?: true };

export interface SendTarget {
  /** The APNs topic (bundle id) of the push's app; falls back to the provider's default topic. */
  apnsTopic?: string;
}

/** A push Herald refuses before any request (SendResult's `notSent`): prepare's refusal, as send would return it. */
export type Refusal = Extract<SendResult, { kind: 'permanent' | 'dead-token' }> & { notSent: true };

declare const preparedBrand: unique symbol;

/** The request a provider's prepare made of a push that passed its checks: opaque, handed back to that provider's send. */
export type Prepared = { readonly [preparedBrand]: true };

/** Whether what prepare made of a push, or what send returned for it, is Herald's refusal: no request was made. */
export const isRefusal = <T extends object>(checked: T | Refusal): checked is Refusal => (checked as { notSent?: unknown }).notSent === true;

/** One platform's sender. `send` never throws for a provider outcome; it returns a SendResult. */
export interface PushProvider {
  readonly platform: Platform;
  /**
   * Herald's own checks of a push, synchronous and without a request (the provider's documented
   * rules, its APNs topic, credentials this process can use): a Refusal, or the request made of it
   * for `send`. The pusher makes them before it asks the rate limiter, so a push that can never be
   * sent takes no budget and is no provider request. Unset: `send` makes them.
   */
  prepare?(push: DevicePush, target: SendTarget): Prepared | Refusal;
  /**
   * `prepared`: what this provider's prepare made of the push, whose checks are then not made
   * again. `stale`: it was made a while ago (the push waited for budget), so what counts from now
   * (a TTL left until expiresAt, a sent-at stamp) is made again by the clock, unchecked: it can
   * only have shrunk.
   */
  send(push: DevicePush, target: SendTarget, prepared?: Prepared, stale?: boolean): Promise<SendResult>;
  close(): Promise<void>;
}
