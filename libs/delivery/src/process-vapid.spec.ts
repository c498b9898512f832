import { createECDH } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { processVapid } from './process-vapid.ts';

const pair = () => {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { publicKey: ecdh.getPublicKey().toString('base64url'), privateKey: ecdh.getPrivateKey().toString('base64url') };
};
const subject = 'mailto:ops@example.com';
const settings = (publicKey: string, privateKey: string) => ({ WEB_PUSH_VAPID_PUBLIC_KEY: publicKey, WEB_PUSH_VAPID_PRIVATE_KEY: privateKey, WEB_PUSH_VAPID_SUBJECT: subject });

describe("the web-pusher's process VAPID pair", () => {
  it('takes the two keys of one pair', () => {
    const { publicKey, privateKey } = pair();
    expect(processVapid(settings(publicKey, privateKey))).toEqual({ subject, current: { publicKey, privateKey } });
  });

  it('refuses at start two keys of two pairs, and a public key off the curve, saying which', () => {
    const [a, b] = [pair(), pair()];
    expect(() => processVapid(settings(a.publicKey, b.privateKey))).toThrow(/WEB_PUSH_VAPID_PUBLIC_KEY is not the public key of WEB_PUSH_VAPID_PRIVATE_KEY/);
    const offCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString('base64url');
    expect(() => processVapid(settings(offCurve, a.privateKey))).toThrow(/WEB_PUSH_VAPID_PUBLIC_KEY is not a point on the P-256 curve/);
    expect(() => processVapid(settings(a.publicKey, Buffer.alloc(32, 0).toString('base64url')))).toThrow(/WEB_PUSH_VAPID_PRIVATE_KEY is no P-256 private key/);
  });
});
