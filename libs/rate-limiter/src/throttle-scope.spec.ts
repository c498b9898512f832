import { describe, expect, it } from 'vitest';
import { isThrottle, pauseAsked, throttleScope } from './throttle-scope.ts';

const transient = (reason: string, retryAfterMs?: number) => ({
  kind: 'transient',
  reason,
  ...(retryAfterMs !== undefined && { retryAfterMs }),
});

describe('throttleScope (whom a throttle without Retry-After is about)', () => {
  it('APNs 429 TooManyRequests and FCM device-message-rate-exceeded are about one device: nobody else slows down', () => {
    expect(throttleScope(transient('TooManyRequests'))).toBe('device');
    expect(
      throttleScope(transient('device-message-rate-exceeded: The rate of messages to a particular device is too high.')),
    ).toBe('device');
    // A v1 QUOTA_EXCEEDED whose QuotaFailure names the device's quota, as fcm-classify.ts words it.
    expect(throttleScope(transient('QUOTA_EXCEEDED (device-message-rate-exceeded): Quota exceeded'))).toBe('device');
  });

  it("FCM QUOTA_EXCEEDED (firebase-admin: message-rate-exceeded) and other FCM 429s are about the app's project quota", () => {
    expect(throttleScope(transient('QUOTA_EXCEEDED: Quota exceeded'))).toBe('app');
    expect(throttleScope(transient('message-rate-exceeded: Sending limit exceeded for the message target.'))).toBe('app');
    expect(throttleScope(transient('HTTP 429'))).toBe('app');
  });

  it("Microsoft's push service's 406 (WNS: the sender exceeded its throttle limit) is about the app at that push service", () => {
    expect(throttleScope(transient('WnsThrottled: HTTP 406'))).toBe('app');
    expect(pauseAsked(transient('WnsThrottled: HTTP 406', 900_000))).toBe(900_000);
  });

  it("an FCM 429 is about the app's project quota by its status, whatever its reason reads", () => {
    // Without FCM's own error detail a 429 reads RESOURCE_EXHAUSTED (Google's status name), which slowed nobody.
    expect(throttleScope({ ...transient("RESOURCE_EXHAUSTED: Quota exceeded for quota metric 'Send requests'"), httpStatus: 429 })).toBe('app');
    expect(throttleScope({ ...transient('RESOURCE_EXHAUSTED (device-message-rate-exceeded)'), httpStatus: 429 })).toBe('device');
    expect(throttleScope({ ...transient('INTERNAL'), httpStatus: 500 })).toBeUndefined();
  });

  it('APNs 503 and FCM UNAVAILABLE are about the provider: the platform slows down', () => {
    expect(throttleScope(transient('ServiceUnavailable'))).toBe('platform');
    expect(throttleScope(transient('UNAVAILABLE: HTTP 503'))).toBe('platform');
    expect(throttleScope(transient('server-unavailable: The FCM server could not process the request in time.'))).toBe(
      'platform',
    );
    expect(throttleScope(transient('HTTP 503'))).toBe('platform');
  });

  it('other transient failures, transport failures and non-transient answers are no throttle', () => {
    for (const answer of [
      transient('InternalServerError'),
      transient('transport: ECONNRESET'),
      transient('transport: TooManyRequests'),
      transient('TooManyProviderTokenUpdates'),
      { kind: 'permanent', reason: 'TooManyRequests' },
      { kind: 'dead-token', reason: 'Unregistered' },
      { kind: 'delivered' },
    ]) {
      expect(throttleScope(answer), JSON.stringify(answer)).toBeUndefined();
      expect(isThrottle(answer)).toBe(false);
    }
  });
});

describe('pauseAsked', () => {
  it('is the Retry-After of a transient answer, whatever its reason', () => {
    expect(pauseAsked(transient('TooManyRequests', 5000))).toBe(5000);
    expect(pauseAsked(transient('InternalServerError', 2000))).toBe(2000);
    expect(pauseAsked(transient('TooManyRequests'))).toBe(0);
  });

  it('is 0 for any other answer and for unusable values', () => {
    expect(pauseAsked({ kind: 'permanent', reason: 'PayloadTooLarge', retryAfterMs: 5000 })).toBe(0);
    expect(pauseAsked(transient('TooManyRequests', -5))).toBe(0);
    expect(pauseAsked(transient('TooManyRequests', Number.POSITIVE_INFINITY))).toBe(0);
  });
});
