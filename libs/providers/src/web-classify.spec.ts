import { describe, expect, it } from 'vitest';
import { classifyWebPushAnswer } from './web-classify.ts';

describe('push service answers (RFC 8030 §5, RFC 8292)', () => {
  it('2xx is delivered, with the push message resource as the id', () => {
    expect(classifyWebPushAnswer({ status: 201, location: 'https://push.example.com/m/1' })).toEqual({ kind: 'delivered', providerMessageId: 'https://push.example.com/m/1' });
    expect(classifyWebPushAnswer({ status: 202 })).toEqual({ kind: 'delivered' });
  });

  it('404 and 410 are dead subscriptions', () => {
    expect(classifyWebPushAnswer({ status: 410, body: 'push subscription has unsubscribed or expired' })).toEqual({ kind: 'dead-token', reason: 'Gone' });
    expect(classifyWebPushAnswer({ status: 404 })).toEqual({ kind: 'dead-token', reason: 'NotFound' });
  });

  it("Microsoft's push service's 406 (its throttle: \"the cloud service exceeded its throttle limit\") is transient and keeps the Retry-After", () => {
    expect(classifyWebPushAnswer({ status: 406, retryAfterMs: 900_000, body: '' })).toEqual({ kind: 'transient', reason: 'WnsThrottled: HTTP 406', retryAfterMs: 900_000 });
    expect(classifyWebPushAnswer({ status: 406 })).toEqual({ kind: 'transient', reason: 'WnsThrottled: HTTP 406' });
  });

  it('429 and 5xx are transient and keep the Retry-After', () => {
    expect(classifyWebPushAnswer({ status: 429, retryAfterMs: 30_000 })).toEqual({ kind: 'transient', reason: 'TooManyRequests: HTTP 429', retryAfterMs: 30_000 });
    expect(classifyWebPushAnswer({ status: 503, retryAfterMs: 1000 })).toMatchObject({ kind: 'transient', retryAfterMs: 1000 });
    expect(classifyWebPushAnswer({ status: 500 })).toMatchObject({ kind: 'transient' });
  });

  it('401 is the app\'s VAPID JWT refused, 403 a key that does not match the subscription, 413 too large, 400 bad request: all permanent', () => {
    expect(classifyWebPushAnswer({ status: 401, body: 'bad jwt' })).toEqual({ kind: 'permanent', reason: 'VapidUnauthorized: the push service refused the VAPID JWT (HTTP 401: bad jwt)' });
    expect(classifyWebPushAnswer({ status: 403 })).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^VapidKeyMismatch/) });
    // Apple's and FCM's words for a JWT they refuse: the app's credential, as a 401 (app-ban.spec.ts: it counts towards a ban).
    for (const body of ['{"reason":"BadJwtToken"}', 'invalid JWT provided']) {
      expect(classifyWebPushAnswer({ status: 403, body })).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^VapidUnauthorized: /) });
    }
    // Words for "signed with another key than the subscription's", whatever the status: one subscription's problem, not the app's.
    for (const [status, body] of [
      [400, '{"reason":"VapidPkHashMismatch"}'],
      [401, '{"code":401,"errno":109,"error":"Unauthorized","message":"VAPID public key mismatch"}'],
      [403, 'the VAPID credentials in the authorization header do not correspond to the credentials used to create the subscriptions.'],
    ] as const) {
      expect(classifyWebPushAnswer({ status, body })).toMatchObject({ kind: 'permanent', reason: expect.stringMatching(/^VapidKeyMismatch: /) });
    }
    // autopush's errno 109 is any refused VAPID authentication: without the words, the app's JWT.
    expect(classifyWebPushAnswer({ status: 401, body: '{"code":401,"errno":109,"error":"Unauthorized","message":"Invalid Authorization"}' })).toMatchObject({ reason: expect.stringMatching(/^VapidUnauthorized: /) });
    expect(classifyWebPushAnswer({ status: 413 })).toMatchObject({ kind: 'permanent', reason: 'PayloadTooLarge: HTTP 413' });
    expect(classifyWebPushAnswer({ status: 400, body: 'x'.repeat(500) })).toMatchObject({ kind: 'permanent' });
    expect((classifyWebPushAnswer({ status: 400, body: 'x'.repeat(500) }) as { reason: string }).reason.length).toBeLessThan(300);
  });

  it('a 5xx without Retry-After is an outage sign; with one, a 429 or a 4xx is not', () => {
    expect(classifyWebPushAnswer({ status: 500 })).toMatchObject({ kind: 'transient', outage: true });
    expect(classifyWebPushAnswer({ status: 503, retryAfterMs: 30_000 })).not.toHaveProperty('outage');
    expect(classifyWebPushAnswer({ status: 429 })).not.toHaveProperty('outage');
    expect(classifyWebPushAnswer({ status: 400 })).not.toHaveProperty('outage');
  });
});
