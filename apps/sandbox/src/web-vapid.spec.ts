import { createECDH, createPrivateKey, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { asService, checkVapid } from './web-vapid.ts';

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

  // RFC 8292 §2: exp "MUST NOT be more than 24 hours from the time of the request"; Apple: "more than one day
  // into the future" is BadJwtToken; autopush: exp > now + one day. No allowance: 24 h + 1 s is refused.
  // RFC 7519 §4.1.4: on or after exp the JWT "MUST NOT be accepted"; before, a minute's leeway took one just expired.
  it('refuses a JWT whose exp has just passed', () => {
    expect(checkVapid(header({ ...good, exp: NOW + 1 }), ORIGIN, undefined, NOW)).toMatchObject({ ok: true });
    for (const exp of [NOW, NOW - 1, NOW - 59]) expect(checkVapid(header({ ...good, exp }), ORIGIN, undefined, NOW), String(exp - NOW)).toMatchObject({ ok: false, status: 401, reason: expect.stringMatching(/expired/) });
  });

  it('takes exp up to 24 h from the request, not one second more', () => {
    expect(checkVapid(header({ ...good, exp: NOW + 24 * 3600 }), ORIGIN, undefined, NOW)).toMatchObject({ ok: true });
    expect(checkVapid(header({ ...good, exp: NOW + 24 * 3600 + 1 }), ORIGIN, undefined, NOW)).toMatchObject({ ok: false, status: 401, reason: expect.stringMatching(/more than 24 hours/) });
    expect(asService(checkVapid(header({ ...good, exp: NOW + 24 * 3600 + 1 }), ORIGIN, undefined, NOW), 'apple')).toMatchObject({ ok: false, status: 403, answer: '{"reason":"BadJwtToken"}' });
  });

  // Mozilla's autopush documentation: the assertion "must contain a sub field containing the publishing contact
  // information as a valid URI designator"; Apple's: a subject that "isn't a URL or mailto:" is BadJwtToken.
  it('answers 401 to a JWT without sub, or whose sub is no mailto: address or https: URL', () => {
    const withoutSub = { aud: good.aud, exp: good.exp };
    const bad = [withoutSub, { ...good, sub: 'mailto:' }, { ...good, sub: 'mailto:?subject=push' }, { ...good, sub: 'https://' }, { ...good, sub: 'https:' }, { ...good, sub: '' }, { ...good, sub: 42 }, { ...good, sub: 'mailto: ops@example.com' }];
    expect(bad.map((claims) => checkVapid(header(claims), ORIGIN, undefined, NOW))).toEqual(Array(bad.length).fill(expect.objectContaining({ ok: false, status: 401, reason: expect.stringMatching(/^sub /) })));
    expect(checkVapid(header({ ...good, sub: 'mailto:ops@example.com,oncall@example.com' }), ORIGIN, undefined, NOW)).toMatchObject({ ok: true });
  });

  it('takes a subject on any host as RFC 8292 asks (Google\'s and Mozilla\'s services do not judge it)', () => {
    for (const sub of ['https://localhost', 'mailto:ops@localhost', 'https://127.0.0.1/contact', 'https://intranet']) {
      expect([sub, asService(checkVapid(header({ ...good, sub }), ORIGIN, undefined, NOW), 'generic')]).toEqual([sub, expect.objectContaining({ ok: true })]);
    }
  });

  it("as Apple's push service: 403 {\"reason\":\"BadJwtToken\"} for each JWT problem its documentation lists, and for a subject on a host it cannot reach", () => {
    const apple = (h: string | undefined) => asService(checkVapid(h, ORIGIN, undefined, NOW), 'apple');
    const refused = [
      apple(undefined),
      apple(`vapid t=${jwt(keyPair(), good)}, k=${pair.k}`),
      apple(header({ ...good, sub: 'ops@example.com' })),
      apple(header({ aud: ORIGIN, exp: NOW + 3600 })),
      apple(header({ ...good, aud: 'https://other.example' })),
      apple(header({ ...good, exp: NOW + 25 * 3600 })),
      ...['https://localhost', 'mailto:ops@localhost', 'https://127.0.0.1/contact', 'https://intranet'].map((sub) => apple(header({ ...good, sub }))),
    ];
    expect(refused.map((r) => (r.ok ? 'ok' : `${r.status} ${r.answer ?? ''}`))).toEqual(Array(refused.length).fill('403 {"reason":"BadJwtToken"}'));
    expect(refused.slice(-4).map((r) => (r.ok ? '' : r.reason))).toEqual(Array(4).fill(expect.stringMatching(/^sub must be a contact a push service can reach/)));
    expect(apple(header(good))).toEqual({ ok: true, claims: good, publicKey: pair.k });
  });

  it("answers 403 when the subscription was made with another applicationServerKey (Apple's: 400 {\"reason\":\"VapidPkHashMismatch\"})", () => {
    const other = keyPair().k;
    expect(checkVapid(header(good), ORIGIN, other, NOW)).toMatchObject({ ok: false, status: 403 });
    expect(asService(checkVapid(header(good), ORIGIN, other, NOW), 'apple')).toMatchObject({ ok: false, status: 400, answer: '{"reason":"VapidPkHashMismatch"}' });
  });
});
