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
    'messaging/mismatched-credential',
    'SENDER_ID_MISMATCH',
    'messaging/third-party-auth-error',
    'messaging/authentication-error',
    'messaging/invalid-payload',
    'messaging/payload-size-limit-exceeded',
  ])('%s is permanent', (code) => {
    expect(classifyFcmError({ code })).toMatchObject({ kind: 'permanent' });
  });

  it('an unknown code is decided by the HTTP status', () => {
    expect(classifyFcmError({ code: 'messaging/unknown-error', httpStatus: 502 })).toMatchObject({ kind: 'transient' });
    expect(classifyFcmError({ code: 'messaging/unknown-error', httpStatus: 404 })).toMatchObject({ kind: 'permanent' });
    expect(classifyFcmError({})).toEqual({ kind: 'transient', reason: 'unknown' });
  });
});
