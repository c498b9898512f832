import { createECDH, createPrivateKey, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkVapid } from './web-vapid.ts';

const ORIGIN = 'https://127.0.0.1:4445';
const NOW = 1_900_000_000;

function keyPair() {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const pub = ecdh.getPublicKey();
  const jwk = { kty: 'EC', crv: 'P-256', d: ecdh.getPrivateKey().toString('base64url'), x: pub.subarray(1, 33).toString('base64url'), y: pub.subarray(33).toString('base64url') };
  return { k: pub.toString('base64url'), key: createPrivateKey({ key: jwk, format: 'jwk' }) };
}

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
function jwt(pair: ReturnType<typeof keyPair>, claims: Record<string, unknown>, alg = 'ES256'): string {
  const input = `${b64({ typ: 'JWT', alg })}.${b64(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: pair.key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}
const good = { aud: ORIGIN, exp: NOW + 3600, sub: 'mailto:ops@example.com' };

describe('VAPID (RFC 8292) as the sandbox push service checks it', () => {
  const pair = keyPair();
  const header = (claims: Record<string, unknown>, p = pair, alg = 'ES256') => `vapid t=${jwt(p, claims, alg)}, k=${p.k}`;

  it('accepts an ES256 JWT signed with k, aud the origin, exp within 24 h, sub mailto:/https:', () => {
    expect(checkVapid(header(good), ORIGIN, undefined, NOW)).toEqual({ ok: true, claims: good, publicKey: pair.k });
    expect(checkVapid(header({ ...good, sub: 'https://example.com/contact' }), ORIGIN, pair.k, NOW)).toMatchObject({ ok: true });
  });

  it('answers 401 for a missing header, a bad signature, another audience, an expired or too distant exp, a bad subject', () => {
    const reasons = [
      checkVapid(undefined, ORIGIN, undefined, NOW),
      checkVapid(`vapid t=${jwt(keyPair(), good)}, k=${pair.k}`, ORIGIN, undefined, NOW),
      checkVapid(header({ ...good, aud: 'https://other.example' }), ORIGIN, undefined, NOW),
      checkVapid(header({ ...good, exp: NOW - 3600 }), ORIGIN, undefined, NOW),
      checkVapid(header({ ...good, exp: NOW + 25 * 3600 }), ORIGIN, undefined, NOW),
      checkVapid(header({ ...good, sub: 'ops@example.com' }), ORIGIN, undefined, NOW),
      checkVapid(header(good, pair, 'HS256'), ORIGIN, undefined, NOW),
    ];
    expect(reasons.map((r) => (r.ok ? 'ok' : r.status))).toEqual([401, 401, 401, 401, 401, 401, 401]);
    expect(reasons.map((r) => (r.ok ? '' : r.reason))).toEqual([
      expect.stringMatching(/missing or malformed/),
      expect.stringMatching(/signature does not verify/),
      expect.stringMatching(/^aud must be/),
      expect.stringMatching(/expired/),
      expect.stringMatching(/24 hours/),
      expect.stringMatching(/^sub must be/),
      expect.stringMatching(/ES256/),
    ]);
  });

  it("answers 403 {\"reason\":\"BadJwtToken\"}, as Apple's push service does, to a subject on a host it cannot reach", () => {
    for (const sub of ['https://localhost', 'mailto:ops@localhost', 'https://127.0.0.1/contact', 'https://intranet']) {
      expect([sub, checkVapid(header({ ...good, sub }), ORIGIN, undefined, NOW)]).toEqual([
        sub,
        { ok: false, status: 403, reason: expect.stringMatching(/^sub must be a contact a push service can reach/) as unknown, answer: '{"reason":"BadJwtToken"}' },
      ]);
    }
  });

  it('answers 403 when the subscription was made with another applicationServerKey', () => {
    expect(checkVapid(header(good), ORIGIN, keyPair().k, NOW)).toMatchObject({ ok: false, status: 403 });
  });
});
