import type { SendResult } from './push-provider.ts';

/** A failed FCM send: the firebase-admin error code (or the v1 FcmError code) plus what the wire said. */
export interface FcmFailure {
  /** firebase-admin's code ("messaging/registration-token-not-registered", "app/network-error") or a v1 code ("UNREGISTERED"). */
  code?: string;
  message?: string;
  /** HTTP status of the answer, when there was one. */
  httpStatus?: number;
  retryAfterMs?: number;
  /** QUOTA_EXCEEDED: the google.rpc.QuotaFailure violations (subject; description), which say whose quota it was. */
  quotaViolations?: string;
  /** INVALID_ARGUMENT with a google.rpc.BadRequest detail: the fields its violations name (absent when it names none). */
  badRequestFields?: string[];
  /** An iOS device's answer through FCM: APNs' reason in the google.firebase.fcm.v1.ApnsError detail ("BadDeviceToken"). */
  apnsReason?: string;
  /** A 401 to an access token fetched before any refusal: a new one is fetched, and the push is to be retried (AccessTokens.refused). */
  staleToken?: boolean;
}

/**
 * Google (ErrorCode, QUOTA_EXCEEDED): "exceeded message rate quota, exceeded device message rate
 * quota, or exceeded topic message rate quota", told apart by the QuotaFailure detail; and "use
 * exponential backoff with a minimum initial delay of 1 minute". The project's quota refills the
 * following minute (Throttling and quotas).
 */
const QUOTA_CODES = new Set(['QUOTA_EXCEEDED', 'message-rate-exceeded', 'device-message-rate-exceeded', 'topics-message-rate-exceeded']);
export const QUOTA_RETRY_NOT_BEFORE_MS = 60_000;
/** Google's server errors and firebase-admin's network failures: no word about the push (SendResult's `outage`). */
const OUTAGE_CODES = new Set(['server-unavailable', 'UNAVAILABLE', 'internal-error', 'INTERNAL', 'network-error', 'network-timeout']);
const DEVICE_QUOTA = /device/i;

type Kind = 'dead-token' | 'transient' | 'permanent' | 'other-sender';

/** firebase-admin client codes and FCM v1 codes, both ways of spelling the same outcome. */
const KIND_BY_CODE: Record<string, Kind> = {
  'registration-token-not-registered': 'dead-token',
  UNREGISTERED: 'dead-token',
  'invalid-registration-token': 'dead-token',
  'message-rate-exceeded': 'transient',
  'device-message-rate-exceeded': 'transient',
  'topics-message-rate-exceeded': 'transient',
  QUOTA_EXCEEDED: 'transient',
  'server-unavailable': 'transient',
  UNAVAILABLE: 'transient',
  'internal-error': 'transient',
  INTERNAL: 'transient',
  'network-error': 'transient',
  'network-timeout': 'transient',
  // "The authenticated sender ID is different from the sender ID for the registration token": a
  // token of another Firebase project, dead for this app's credentials (unless they are what is wrong).
  'mismatched-credential': 'other-sender',
  SENDER_ID_MISMATCH: 'other-sender',
  'third-party-auth-error': 'permanent',
  THIRD_PARTY_AUTH_ERROR: 'permanent',
  'authentication-error': 'permanent',
  'invalid-credential': 'permanent',
  'invalid-payload': 'permanent',
  'payload-size-limit-exceeded': 'permanent',
};

/**
 * FCM answers INVALID_ARGUMENT both for a bad token and for a bad message. Google (FCM error codes):
 * the two "have the same code and status, but the details array contains values of different
 * types": google.rpc.BadRequest "indicating an error in request values" (naming the field), or
 * FcmError for "an FCM specific error" (the bad token's example, "The registration token is not a
 * valid FCM registration token"). A BadRequest is the token's only when it names message.token;
 * without one, the words decide.
 */
const INVALID_TOKEN_MESSAGE = /registration token|not a valid FCM registration token/i;
const TOKEN_FIELD = 'message.token';

/**
 * An iOS device's answer through FCM (the ApnsError detail) is decided by APNs' reason alone, not by
 * the BadRequest FCM adds naming message.token: dead only for Apple's 410 reasons. BadDeviceToken and
 * DeviceTokenNotForTopic are the token's fault or the app's (its Firebase project holding the other
 * environment's APNs key would answer so for every iOS token); through APNs Herald keeps such a token
 * while the app's pushes are delivered, but through FCM an Android delivery would count as the app's,
 * so here the token is kept and the push parked, its reason naming APNs' words.
 */
const APNS_DEAD = new Set(['Unregistered', 'ExpiredToken']);

function invalidArgumentKind(f: FcmFailure): Kind {
  if (f.apnsReason !== undefined) return APNS_DEAD.has(f.apnsReason) ? 'dead-token' : 'permanent';
  const tokens = f.badRequestFields === undefined ? INVALID_TOKEN_MESSAGE.test(f.message ?? '') : f.badRequestFields.includes(TOKEN_FIELD);
  return tokens ? 'dead-token' : 'permanent';
}
const INVALID_ARGUMENT_CODES = new Set(['invalid-argument', 'INVALID_ARGUMENT']);

const shortCode = (code: string): string => code.replace(/^(messaging|app)\//, '');

function kindOf(f: FcmFailure, code: string): Kind {
  if (f.staleToken === true) return 'transient';
  if (INVALID_ARGUMENT_CODES.has(code)) return invalidArgumentKind(f);
  const known = KIND_BY_CODE[code];
  if (known !== undefined) return known;
  if (f.httpStatus === undefined || f.httpStatus >= 500 || f.httpStatus === 429 || f.httpStatus === 408) return 'transient';
  return 'permanent';
}

/**
 * Pure: map an FCM failure to dead-token / transient / permanent (DESIGN.md failure table). A 429 is
 * a quota answer by its status, whatever its code says: without FCM's own error detail it reads
 * RESOURCE_EXHAUSTED, Google's status name, and was neither given the minute nor taken for the app's
 * quota. A transient answer keeps its HTTP status, which decides whom the limiter slows down
 * (throttle-scope.ts).
 */
export function classifyFcmError(f: FcmFailure): SendResult {
  const code = shortCode(f.code ?? '');
  const quota = QUOTA_CODES.has(code) || f.httpStatus === 429;
  // A device's own rate reads as firebase-admin names it, so the limiter slows that device's push only (throttle-scope.ts).
  const deviceQuota = quota && code !== 'device-message-rate-exceeded' && DEVICE_QUOTA.test(f.quotaViolations ?? '') ? ' (device-message-rate-exceeded)' : '';
  const apns = f.apnsReason === undefined ? undefined : `APNs ${f.apnsReason}`;
  const renewed = f.staleToken === true ? 'the access token was refused; the retry fetches a new one' : undefined;
  const reason = [(code || (f.httpStatus !== undefined ? `HTTP ${f.httpStatus}` : 'unknown')) + deviceQuota, f.message, apns, renewed].filter(Boolean).join(': ');
  const kind = kindOf(f, code);
  if (kind === 'transient') {
    const wait = f.retryAfterMs !== undefined ? { retryAfterMs: f.retryAfterMs } : quota ? { retryNotBeforeMs: QUOTA_RETRY_NOT_BEFORE_MS } : {};
    const outage = !quota && f.staleToken !== true && f.retryAfterMs === undefined && (f.httpStatus === undefined ? OUTAGE_CODES.has(code) : f.httpStatus >= 500);
    return { kind, reason, ...(f.httpStatus !== undefined && { httpStatus: f.httpStatus }), ...wait, ...(outage && { outage: true }) };
  }
  if (kind === 'other-sender') return { kind: 'dead-token', reason, unlessAppFails: true };
  return { kind, reason };
}
