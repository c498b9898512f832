import { describe, expect, it } from 'vitest';
import { classifyApnsFailure } from './apns-classify.ts';

describe('classifyApnsFailure (DESIGN.md failure table, APNs rows)', () => {
  it('410 Unregistered is a dead token, invalid since Apple\'s timestamp', () => {
    expect(classifyApnsFailure({ status: 410, reason: 'Unregistered', timestamp: 1_700_000_000_000 })).toEqual({
      kind: 'dead-token',
      reason: 'Unregistered',
      invalidSince: new Date(1_700_000_000_000),
    });
    expect(classifyApnsFailure({ status: 410, reason: 'ExpiredToken' })).toEqual({ kind: 'dead-token', reason: 'ExpiredToken' });
  });

  it.each(['BadDeviceToken', 'DeviceTokenNotForTopic'])('400 %s is a dead token unless the app itself fails (a token of the other environment or topic answers so too)', (reason) => {
    expect(classifyApnsFailure({ status: 400, reason })).toEqual({ kind: 'dead-token', reason, unlessAppFails: true });
  });

  it('400 IdleTimeout is about the connection, not the push: transient', () => {
    expect(classifyApnsFailure({ status: 400, reason: 'IdleTimeout' })).toEqual({ kind: 'transient', reason: 'IdleTimeout' });
  });

  it('429 TooManyRequests is transient, with Retry-After when given', () => {
    expect(classifyApnsFailure({ status: 429, reason: 'TooManyRequests' })).toEqual({ kind: 'transient', reason: 'TooManyRequests' });
    expect(classifyApnsFailure({ status: 429, reason: 'TooManyRequests', retryAfterSeconds: 3 })).toEqual({ kind: 'transient', reason: 'TooManyRequests', retryAfterMs: 3000 });
  });

  it.each([
    [500, 'InternalServerError'],
    [503, 'ServiceUnavailable'],
    [503, 'Shutdown'],
    [502, undefined],
  ])('%i %s is transient and a server error, to be waited out as Apple asks, with Retry-After when given (an outage sign without one)', (status, reason) => {
    const said = reason ?? `HTTP ${status}`;
    expect(classifyApnsFailure({ status, ...(reason !== undefined && { reason }) })).toEqual({ kind: 'transient', reason: said, serverError: true, outage: true });
    expect(classifyApnsFailure({ status, reason: said, retryAfterSeconds: 3 })).toEqual({ kind: 'transient', reason: said, serverError: true, retryAfterMs: 3000 });
  });

  it('a transport failure (timeout, reset) is transient, an outage sign', () => {
    expect(classifyApnsFailure({ transportError: 'apn write timeout' })).toEqual({ kind: 'transient', reason: 'transport: apn write timeout', outage: true });
  });

  it('403 ExpiredProviderToken is transient (the client signs a fresh token)', () => {
    expect(classifyApnsFailure({ status: 403, reason: 'ExpiredProviderToken' })).toMatchObject({ kind: 'transient' });
  });

  it.each([
    [413, 'PayloadTooLarge'],
    [400, 'BadTopic'],
    [400, 'TopicDisallowed'],
    [400, 'MissingTopic'],
    [400, 'BadPriority'],
    [403, 'InvalidProviderToken'],
    [403, 'MissingProviderToken'],
    [403, 'BadCertificate'],
    [405, 'MethodNotAllowed'],
  ])('%i %s is permanent', (status, reason) => {
    expect(classifyApnsFailure({ status, reason })).toEqual({ kind: 'permanent', reason });
  });

  it.each([
    [413, 'PayloadTooLarge'],
    [400, 'InvalidPushType'],
    [400, 'TopicDisallowed'],
    [403, 'InvalidProviderToken'],
  ])('%i %s is not a token problem: permanent with Apple\'s reason, never a dead token', (status, reason) => {
    expect(classifyApnsFailure({ status, reason, retryAfterSeconds: 5 })).toEqual({ kind: 'permanent', reason });
  });

  it('a Retry-After of 0 is kept; a negative or non-finite one is ignored', () => {
    expect(classifyApnsFailure({ status: 429, reason: 'TooManyRequests', retryAfterSeconds: 0 })).toEqual({ kind: 'transient', reason: 'TooManyRequests', retryAfterMs: 0 });
    expect(classifyApnsFailure({ status: 429, reason: 'TooManyRequests', retryAfterSeconds: -1 })).toEqual({ kind: 'transient', reason: 'TooManyRequests' });
    expect(classifyApnsFailure({ status: 503, reason: 'ServiceUnavailable', retryAfterSeconds: Number.NaN })).toEqual({ kind: 'transient', reason: 'ServiceUnavailable', serverError: true, outage: true });
  });

  it('an unknown 5xx is transient, an unknown 4xx permanent', () => {
    expect(classifyApnsFailure({ status: 502 })).toEqual({ kind: 'transient', reason: 'HTTP 502', serverError: true, outage: true });
    expect(classifyApnsFailure({ status: 418 })).toEqual({ kind: 'permanent', reason: 'HTTP 418' });
  });
});
