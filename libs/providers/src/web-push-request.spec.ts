import { describe, expect, it } from 'vitest';
import { requestNotMade } from './web-push-provider.ts';

/** An error as web-push or node:crypto throws it, with its code when it has one. */
const thrown = (message: string, code?: string): Error => Object.assign(new Error(message), code === undefined ? {} : { code });

describe('a web push whose request web-push could not make', () => {
  it("condemns the subscription only for its own keys: web-push's checks of p256dh and auth, and a point off the curve", () => {
    const keys = [
      thrown('The subscription p256dh value should be 65 bytes long.'),
      thrown('The subscription auth key should be at least 16 bytes long'),
      thrown('No user auth provided for encryption.'),
      thrown('Public key is not valid for specified curve', 'ERR_CRYPTO_ECDH_INVALID_PUBLIC_KEY'),
    ];
    expect(keys.map((e) => requestNotMade(e).kind)).toEqual(['dead-token', 'dead-token', 'dead-token', 'dead-token']);
  });

  // Before, anything but a VAPID message condemned the subscription: a web-pusher whose clock ran
  // 12 h ahead made every JWT's expiry too far off for web-push, and lost every subscription it sent to.
  it('parks, replayable, what is no fault of the subscription: a JWT expiry web-push refuses, the app\'s VAPID keys', () => {
    expect(requestNotMade(thrown('`expiration` value is greater than maximum of 24 hours'))).toEqual({
      kind: 'permanent',
      reason: 'web push request not made: `expiration` value is greater than maximum of 24 hours',
      notSent: true,
    });
    expect(requestNotMade(thrown('Vapid private key should be 32 bytes long when decoded.'))).toMatchObject({ kind: 'permanent', reason: /^credentials: VAPID / });
  });
});
