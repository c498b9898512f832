import type { SendResult } from './push-provider.ts';

/** An APNs answer other than 200, or a transport failure (no status). */
export interface ApnsFailure {
  status?: number;
  /** Apple's `reason`, e.g. "BadDeviceToken". */
  reason?: string;
  /** Apple's 410 `timestamp`: ms since the epoch when the token stopped being valid. */
  timestamp?: number;
  retryAfterSeconds?: number;
  /** Message of a transport error (timeout, reset, TLS failure). */
  transportError?: string;
}

/** Apple: "Verify that the request contains a valid token and that the token matches the environment" (and the topic): a token of the other environment or app answers so too. */
const DEAD_TOKEN_400 = new Set(['BadDeviceToken', 'DeviceTokenNotForTopic']);
/** Apple's 400 IdleTimeout is about the connection, not the push: send it again. */
const TRANSIENT_400 = new Set(['IdleTimeout']);
/** The client library regenerates the token after this one; the next attempt works. */
const TRANSIENT_403 = new Set(['ExpiredProviderToken']);
const TRANSIENT_STATUS = new Set([408, 429]);

const retryAfter = (f: ApnsFailure): { retryAfterMs?: number } =>
  f.retryAfterSeconds !== undefined && Number.isFinite(f.retryAfterSeconds) && f.retryAfterSeconds >= 0
    ? { retryAfterMs: Math.ceil(f.retryAfterSeconds * 1000) }
    : {};

/** Pure: map an APNs failure to dead-token / transient / permanent (DESIGN.md failure table). */
export function classifyApnsFailure(f: ApnsFailure): SendResult {
  const reason = f.reason ?? (f.status !== undefined ? `HTTP ${f.status}` : (f.transportError ?? 'unknown APNs failure'));
  if (f.status === undefined) return { kind: 'transient', reason: `transport: ${reason}`, outage: true };
  if (f.status === 410) {
    const invalidSince = f.timestamp !== undefined && Number.isFinite(f.timestamp) ? new Date(f.timestamp) : undefined;
    return { kind: 'dead-token', reason, ...(invalidSince !== undefined ? { invalidSince } : {}) };
  }
  if (f.status === 400 && DEAD_TOKEN_400.has(reason)) return { kind: 'dead-token', reason, unlessAppFails: true };
  if (f.status === 400 && TRANSIENT_400.has(reason)) return { kind: 'transient', reason };
  if (f.status === 403 && TRANSIENT_403.has(reason)) return { kind: 'transient', reason };
  // Apple: "After 15 minutes, you can retry JSON payloads that receive response status codes that begin with 5XX."
  if (f.status >= 500) {
    const wait = retryAfter(f);
    return { kind: 'transient', reason, serverError: true, ...wait, ...(wait.retryAfterMs === undefined && { outage: true }) };
  }
  if (TRANSIENT_STATUS.has(f.status)) return { kind: 'transient', reason, ...retryAfter(f) };
  return { kind: 'permanent', reason };
}
