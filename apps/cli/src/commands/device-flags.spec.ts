import { createECDH } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deviceFieldsFromFlags } from './device-flags.ts';

// A browser's key is a point on P-256: the contract checks it.
const browserKey = createECDH('prime256v1');
browserKey.generateKeys();
const keys = { p256dh: browserKey.getPublicKey().toString('base64url'), auth: 'A'.repeat(22) };
const endpoint = 'https://fcm.googleapis.com/fcm/send/abc';

describe('herald register / unregister device flags', () => {
  it('web: --subscription (PushSubscription.toJSON()) or --endpoint with --p256dh and --auth give token and keys', () => {
    const subscription = JSON.stringify({ endpoint, expirationTime: null, keys });
    expect(deviceFieldsFromFlags({ platform: 'web', subscription }, 'register')).toEqual({ token: endpoint, keys });
    expect(deviceFieldsFromFlags({ platform: 'web', endpoint, ...keys, applicationServerKey: 'K' }, 'register')).toEqual({ token: endpoint, keys, applicationServerKey: 'K' });
    expect(deviceFieldsFromFlags({ platform: 'web', endpoint }, 'unregister')).toEqual({ token: endpoint });
  });

  it('names the flag or field that is wrong', () => {
    expect(() => deviceFieldsFromFlags({ platform: 'web', endpoint }, 'register')).toThrow(/--p256dh and --auth/);
    expect(() => deviceFieldsFromFlags({ platform: 'web', subscription: '{' }, 'register')).toThrow(/^--subscription must be the JSON/);
    expect(() => deviceFieldsFromFlags({ platform: 'web', subscription: JSON.stringify({ endpoint, keys: { ...keys, auth: 'x' } }) }, 'register')).toThrow(/subscription\.keys\.auth: /);
    expect(() => deviceFieldsFromFlags({ platform: 'web', subscription: '{}', endpoint }, 'register')).toThrow(/not both/);
    expect(() => deviceFieldsFromFlags({ platform: 'apns', token: 'ab', p256dh: keys.p256dh }, 'register')).toThrow('--p256dh belong to --platform web');
    expect(() => deviceFieldsFromFlags({ platform: 'fcm' }, 'register')).toThrow('--token is required');
  });
});
