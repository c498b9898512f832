import { FcmErrorCodes, type FcmErrorCode } from './google-errors.ts';

export const ApnsFaultErrors = [
  'Unregistered', 'BadDeviceToken', 'DeviceTokenNotForTopic', 'TooManyRequests', 'InternalServerError', 'ServiceUnavailable', 'PayloadTooLarge',
] as const;
export type ApnsFaultError = (typeof ApnsFaultErrors)[number];

/** Web Push faults, by the push service's status: 404, 410, 413, 429 (with retryAfterSeconds), 500. */
/** `NotAcceptable`: Microsoft's push service's throttle (WNS answers 406 with a Retry-After). */
export const WebFaultErrors = ['NotFound', 'Gone', 'NotAcceptable', 'PayloadTooLarge', 'TooManyRequests', 'InternalServerError'] as const;
export type WebFaultError = (typeof WebFaultErrors)[number];
export const WEB_FAULT_STATUS: Record<WebFaultError, number> = { NotFound: 404, Gone: 410, NotAcceptable: 406, PayloadTooLarge: 413, TooManyRequests: 429, InternalServerError: 500 };

export type FaultPlatform = 'apns' | 'fcm' | 'web';

/** What `POST /faults` accepts. Without `error` the fault only delays a normal answer. */
export interface FaultSpec {
  platform: FaultPlatform;
  token?: string;
  fraction?: number;
  error?: ApnsFaultError | FcmErrorCode | WebFaultError;
  times?: number;
  retryAfterSeconds?: number;
  delayMs?: number;
  /**
   * APNs 410 Unregistered only: the `timestamp` its body carries (ms since the epoch; default the
   * time of the answer), "the last time at which APNs confirmed that the device token was no
   * longer valid for the topic". Earlier than the device's registration, the token lives again.
   */
  unregisteredAtMs?: number;
  /**
   * FCM QUOTA_EXCEEDED only: which quota, as its google.rpc.QuotaFailure detail says ("exceeded
   * message rate quota" of the project, or "exceeded device message rate quota"); without it, no detail.
   */
  quota?: 'message' | 'device';
  /**
   * APNs only, with an error: the connection is closed with it (GOAWAY, NO_ERROR, naming this
   * request's stream the last, its debug data `{"reason": error}` as Apple documents a GOAWAY,
   * sent before its answer; the answer still comes). That APNs closes a connection with a 500 or
   * 503 is observed (node-apn's users), not documented.
   */
  goaway?: true;
}

export interface Fault extends FaultSpec {
  id: string;
  /** Answers left before the fault stops (undefined: forever). */
  remaining?: number;
}

export type ParsedFault = { ok: true; spec: FaultSpec } | { ok: false; reason: string };

const isNonNegative = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

function checkNumbers(o: Record<string, unknown>): string | undefined {
  if (o['fraction'] !== undefined && (!isNonNegative(o['fraction']) || o['fraction'] > 1)) return 'fraction must be a number in 0..1';
  if (o['times'] !== undefined && (!Number.isInteger(o['times']) || (o['times'] as number) < 1)) return 'times must be a positive integer';
  if (o['retryAfterSeconds'] !== undefined && !isNonNegative(o['retryAfterSeconds'])) return 'retryAfterSeconds must be a non-negative number';
  if (o['delayMs'] !== undefined && !isNonNegative(o['delayMs'])) return 'delayMs must be a non-negative number';
  if (o['quota'] !== undefined) {
    if (o['platform'] !== 'fcm' || o['error'] !== 'QUOTA_EXCEEDED') return 'quota goes with an FCM QUOTA_EXCEEDED fault only';
    if (o['quota'] !== 'message' && o['quota'] !== 'device') return 'quota must be "message" or "device"';
  }
  if (o['goaway'] !== undefined) {
    if (o['platform'] !== 'apns' || o['error'] === undefined) return 'goaway goes with an APNs fault with an error only';
    if (o['goaway'] !== true) return 'goaway must be true';
  }
  if (o['unregisteredAtMs'] !== undefined) {
    if (o['platform'] !== 'apns' || o['error'] !== 'Unregistered') return 'unregisteredAtMs goes with an APNs Unregistered (410) fault only';
    if (!isNonNegative(o['unregisteredAtMs'])) return 'unregisteredAtMs must be a non-negative number (ms since the epoch)';
  }
  return undefined;
}

/** Validate a `POST /faults` body. */
export function parseFaultSpec(body: unknown): ParsedFault {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: false, reason: 'body must be a JSON object' };
  const o = body as Record<string, unknown>;
  const platform = o['platform'];
  if (platform !== 'apns' && platform !== 'fcm' && platform !== 'web') return { ok: false, reason: 'platform must be "apns", "fcm" or "web"' };
  const allowed: readonly string[] = platform === 'apns' ? ApnsFaultErrors : platform === 'fcm' ? FcmErrorCodes : WebFaultErrors;
  if (o['error'] !== undefined && !allowed.includes(o['error'] as string)) {
    return { ok: false, reason: `error must be one of ${allowed.join(', ')} for ${platform}` };
  }
  if (o['error'] === undefined && o['delayMs'] === undefined) return { ok: false, reason: 'give an error, a delayMs, or both' };
  if (o['token'] !== undefined && (typeof o['token'] !== 'string' || o['token'].length === 0)) return { ok: false, reason: 'token must be a non-empty string' };
  const problem = checkNumbers(o);
  if (problem !== undefined) return { ok: false, reason: problem };
  return { ok: true, spec: o as unknown as FaultSpec };
}

/** The injected faults, matched in the order they were added. */
export class FaultTable {
  private faults: Fault[] = [];
  private nextId = 1;

  constructor(private readonly random: () => number = Math.random) {}

  add(spec: FaultSpec): Fault {
    const fault: Fault = { ...spec, id: `fault-${this.nextId++}`, ...(spec.times !== undefined ? { remaining: spec.times } : {}) };
    this.faults.push(fault);
    return fault;
  }

  list(): readonly Fault[] {
    return this.faults;
  }

  clear(): void {
    this.faults = [];
  }

  /** The first fault that applies to this request, consuming one of its `times`. */
  take(platform: FaultPlatform, token: string | undefined): Fault | undefined {
    const fault = this.faults.find(
      (f) => f.platform === platform && (f.token === undefined || f.token === token) && (f.fraction === undefined || this.random() < f.fraction),
    );
    if (fault?.remaining !== undefined) {
      fault.remaining -= 1;
      if (fault.remaining <= 0) this.faults = this.faults.filter((f) => f !== fault);
    }
    return fault;
  }
}
