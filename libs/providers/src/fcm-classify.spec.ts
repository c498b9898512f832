import { describe, expect, it } from 'vitest';
import { classifyFcmError } from './fcm-classify.ts';

describe('classifyFcmError (DESIGN.md failure table, FCM rows)', () => {
  it('UNREGISTERED is a dead token (firebase-admin code or v1 code)', () => {
    expect(classifyFcmError({ code: 'messaging/registration-token-not-registered', message: 'Requested entity was not found.' })).toEqual({
      kind: 'dead-token',
      reason: 'registration-token-not-registered: Requested entity was not found.',
    });
    expect(classifyFcmError({ code: 'UNREGISTERED' })).toMatchObject({ kind: 'dead-token' });
  });

  it('INVALID_ARGUMENT about the registration token is a dead token; about the message, permanent', () => {
    expect(classifyFcmError({ code: 'messaging/invalid-argument', message: 'The registration token is not a valid FCM registration token' })).toMatchObject({
      kind: 'dead-token',
    });
    expect(classifyFcmError({ code: 'messaging/invalid-argument', message: "Invalid value at 'message.android.ttl'" })).toMatchObject({ kind: 'permanent' });
    expect(classifyFcmError({ code: 'messaging/invalid-registration-token' })).toMatchObject({ kind: 'dead-token' });
  });

  it.each([
    ['messaging/message-rate-exceeded', 429],
    ['QUOTA_EXCEEDED', 429],
    ['messaging/server-unavailable', 503],
    ['UNAVAILABLE', 503],
    ['messaging/internal-error', 500],
    ['INTERNAL', 500],
    ['app/network-timeout', undefined],
    ['app/network-error', undefined],
  ])('%s is transient, with Retry-After when given', (code, httpStatus) => {
    const f = { code, ...(httpStatus !== undefined ? { httpStatus } : {}) };
    expect(classifyFcmError(f)).toMatchObject({ kind: 'transient' });
    expect(classifyFcmError({ ...f, retryAfterMs: 5000 })).toMatchObject({ kind: 'transient', retryAfterMs: 5000 });
  });

  it.each([
    'messaging/third-party-auth-error',
    'messaging/authentication-error',
    'messaging/invalid-payload',
    'messaging/payload-size-limit-exceeded',
  ])('%s is permanent', (code) => {
    expect(classifyFcmError({ code })).toMatchObject({ kind: 'permanent' });
  });

  it('INVALID_ARGUMENT that is not about the token is permanent with FCM\'s own reason, never a dead token', () => {
    const message = "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), Field 'ttl', Illegal duration format";
    expect(classifyFcmError({ code: 'messaging/invalid-argument', message, httpStatus: 400 })).toEqual({ kind: 'permanent', reason: `invalid-argument: ${message}` });
    expect(classifyFcmError({ code: 'INVALID_ARGUMENT', message: 'Request contains an invalid argument.', retryAfterMs: 1000 })).toEqual({
      kind: 'permanent',
      reason: 'INVALID_ARGUMENT: Request contains an invalid argument.',
    });
  });

  it('SENDER_ID_MISMATCH (both spellings) is a token of another sender: dead unless the app itself fails (its credentials may be what is wrong)', () => {
    const message = 'SenderId mismatch';
    expect(classifyFcmError({ code: 'messaging/mismatched-credential', message, httpStatus: 403 })).toEqual({ kind: 'dead-token', reason: `mismatched-credential: ${message}`, unlessAppFails: true });
    expect(classifyFcmError({ code: 'SENDER_ID_MISMATCH', httpStatus: 403 })).toEqual({ kind: 'dead-token', reason: 'SENDER_ID_MISMATCH', unlessAppFails: true });
    expect(classifyFcmError({ code: 'UNREGISTERED', httpStatus: 404 })).toEqual({ kind: 'dead-token', reason: 'UNREGISTERED' });
  });

  it("QUOTA_EXCEEDED without Retry-After waits at least a minute (Google: a minimum initial delay of 1 minute), pausing nothing; its QuotaFailure tells a device's own quota", () => {
    expect(classifyFcmError({ code: 'QUOTA_EXCEEDED', message: 'Quota exceeded', httpStatus: 429 })).toEqual({ kind: 'transient', reason: 'QUOTA_EXCEEDED: Quota exceeded', httpStatus: 429, retryNotBeforeMs: 60_000 });
    expect(classifyFcmError({ code: 'QUOTA_EXCEEDED', message: 'Quota exceeded', httpStatus: 429, quotaViolations: 'exceeded device message rate quota' })).toEqual({
      kind: 'transient',
      reason: 'QUOTA_EXCEEDED (device-message-rate-exceeded): Quota exceeded',
      httpStatus: 429,
      retryNotBeforeMs: 60_000,
    });
    expect(classifyFcmError({ code: 'QUOTA_EXCEEDED', httpStatus: 429, quotaViolations: 'exceeded message rate quota', retryAfterMs: 5000 })).toEqual({ kind: 'transient', reason: 'QUOTA_EXCEEDED', httpStatus: 429, retryAfterMs: 5000 });
    expect(classifyFcmError({ code: 'UNAVAILABLE', httpStatus: 503 })).toEqual({ kind: 'transient', reason: 'UNAVAILABLE', httpStatus: 503, outage: true });
  });

  it("any 429 is a quota answer by its status: one without FCM's own error detail (RESOURCE_EXHAUSTED) waits the minute and slows the app down", () => {
    // Before, it fell back to Google's status name: no minute, and the limiter took it for no throttle at all.
    const bare = classifyFcmError({ code: 'RESOURCE_EXHAUSTED', message: "Quota exceeded for quota metric 'Send requests'", httpStatus: 429 });
    expect(bare).toEqual({ kind: 'transient', reason: "RESOURCE_EXHAUSTED: Quota exceeded for quota metric 'Send requests'", httpStatus: 429, retryNotBeforeMs: 60_000 });
    // Its QuotaFailure still tells a device's own quota.
    expect(classifyFcmError({ code: 'RESOURCE_EXHAUSTED', httpStatus: 429, quotaViolations: 'exceeded device message rate quota' })).toMatchObject({
      reason: 'RESOURCE_EXHAUSTED (device-message-rate-exceeded)',
      retryNotBeforeMs: 60_000,
    });
    // A Retry-After still wins over the minute.
    expect(classifyFcmError({ code: 'RESOURCE_EXHAUSTED', httpStatus: 429, retryAfterMs: 5000 })).toMatchObject({ retryAfterMs: 5000 });
    expect(classifyFcmError({ code: 'RESOURCE_EXHAUSTED', httpStatus: 429, retryAfterMs: 5000 })).not.toHaveProperty('retryNotBeforeMs');
  });

  it('QUOTA_EXCEEDED and UNAVAILABLE carry FCM\'s Retry-After; a permanent or dead-token answer never does', () => {
    expect(classifyFcmError({ code: 'messaging/message-rate-exceeded', httpStatus: 429, retryAfterMs: 7000 })).toEqual({
      kind: 'transient',
      reason: 'message-rate-exceeded',
      httpStatus: 429,
      retryAfterMs: 7000,
    });
    expect(classifyFcmError({ code: 'UNREGISTERED', retryAfterMs: 7000 })).toEqual({ kind: 'dead-token', reason: 'UNREGISTERED' });
  });

  it('UNAUTHENTICATED (401) is permanent, the app credentials refused; to a token fetched before any refusal (staleToken) it is transient, retried with a new one', () => {
    const refused = { code: 'UNAUTHENTICATED', message: 'Request had invalid authentication credentials.', httpStatus: 401 };
    expect(classifyFcmError(refused)).toEqual({ kind: 'permanent', reason: 'UNAUTHENTICATED: Request had invalid authentication credentials.' });
    expect(classifyFcmError({ ...refused, staleToken: true })).toEqual({
      kind: 'transient',
      reason: 'UNAUTHENTICATED: Request had invalid authentication credentials.: the access token was refused; the retry fetches a new one',
      httpStatus: 401,
    });
  });

  it('an unknown code is decided by the HTTP status', () => {
    expect(classifyFcmError({ code: 'messaging/unknown-error', httpStatus: 502 })).toMatchObject({ kind: 'transient' });
    expect(classifyFcmError({ code: 'messaging/unknown-error', httpStatus: 404 })).toMatchObject({ kind: 'permanent' });
    expect(classifyFcmError({})).toEqual({ kind: 'transient', reason: 'unknown' });
  });

  it('an outage sign is a server error or a network failure without Retry-After, never a quota or a refused access token', () => {
    const outage = (f: Parameters<typeof classifyFcmError>[0]): boolean => (classifyFcmError(f) as { outage?: true }).outage === true;
    expect(outage({ code: 'UNAVAILABLE', httpStatus: 503 })).toBe(true);
    expect(outage({ code: 'INTERNAL', httpStatus: 500 })).toBe(true);
    expect(outage({ code: 'messaging/unknown-error', httpStatus: 502 })).toBe(true);
    expect(outage({ code: 'app/network-error' })).toBe(true);
    expect(outage({ code: 'messaging/server-unavailable' })).toBe(true);
    expect(outage({ code: 'UNAVAILABLE', httpStatus: 503, retryAfterMs: 10_000 })).toBe(false);
    expect(outage({ code: 'QUOTA_EXCEEDED', httpStatus: 429 })).toBe(false);
    expect(outage({ code: 'UNAVAILABLE', httpStatus: 503, staleToken: true })).toBe(false);
    expect(outage({ code: 'INVALID_ARGUMENT', httpStatus: 400 })).toBe(false);
    expect(outage({})).toBe(false);
  });
});
