import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConnectionTokens, PROVIDER_TOKEN_MIN_REFRESH_MS, ProviderTokenVerifier, verifyProviderToken } from './apns-jwt.ts';

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const key = { publicKey, keyId: 'KEY1234567', teamId: 'TEAM123456' };
const NOW = Date.UTC(2026, 0, 1, 12);
const nowSec = Math.floor(NOW / 1000);

function jwt(header: object, claims: object, signer: KeyObject = privateKey): string {
  const enc = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const data = `${enc(header)}.${enc(claims)}`;
  const sig = sign('sha256', Buffer.from(data), { key: signer, dsaEncoding: 'ieee-p1363' });
  return `${data}.${sig.toString('base64url')}`;
}
const good = (): string => jwt({ alg: 'ES256', kid: key.keyId }, { iss: key.teamId, iat: nowSec - 10 });

describe('verifyProviderToken', () => {
  it('accepts a token signed by the key with the right kid, iss and a fresh iat', () => {
    expect(verifyProviderToken(`bearer ${good()}`, key, NOW)).toEqual({ ok: true, iat: nowSec - 10 });
  });

  it('is MissingProviderToken without a bearer header', () => {
    expect(verifyProviderToken(undefined, key, NOW)).toEqual({ ok: false, reason: 'MissingProviderToken' });
    expect(verifyProviderToken('basic abc', key, NOW)).toEqual({ ok: false, reason: 'MissingProviderToken' });
  });

  it.each([
    ['another key', () => jwt({ alg: 'ES256', kid: key.keyId }, { iss: key.teamId, iat: nowSec }, other.privateKey)],
    ['wrong kid', () => jwt({ alg: 'ES256', kid: 'OTHERKEY00' }, { iss: key.teamId, iat: nowSec })],
    ['wrong team', () => jwt({ alg: 'ES256', kid: key.keyId }, { iss: 'OTHERTEAM0', iat: nowSec })],
    ['wrong alg', () => jwt({ alg: 'HS256', kid: key.keyId }, { iss: key.teamId, iat: nowSec })],
    ['no iat', () => jwt({ alg: 'ES256', kid: key.keyId }, { iss: key.teamId })],
    ['iat far in the future', () => jwt({ alg: 'ES256', kid: key.keyId }, { iss: key.teamId, iat: nowSec + 3600 })],
    ['garbage', () => 'not-a-jwt'],
    ['tampered claims', () => good().replace(/\.[^.]+\./, `.${Buffer.from(JSON.stringify({ iss: key.teamId, iat: nowSec + 1 })).toString('base64url')}.`)],
  ])('is InvalidProviderToken for %s', (_name, make) => {
    expect(verifyProviderToken(`bearer ${make()}`, key, NOW)).toEqual({ ok: false, reason: 'InvalidProviderToken' });
  });

  it('is ExpiredProviderToken when iat is more than an hour old', () => {
    const old = jwt({ alg: 'ES256', kid: key.keyId }, { iss: key.teamId, iat: nowSec - 3601 });
    expect(verifyProviderToken(`bearer ${old}`, key, NOW)).toEqual({ ok: false, reason: 'ExpiredProviderToken' });
  });

  it('the caching verifier still expires a remembered token after an hour', () => {
    const verifier = new ProviderTokenVerifier(key);
    const header = `bearer ${good()}`;
    expect(verifier.check(header, NOW)).toMatchObject({ ok: true });
    expect(verifier.check(header, NOW + 1000)).toMatchObject({ ok: true });
    expect(verifier.check(header, NOW + 3600_000)).toEqual({ ok: false, reason: 'ExpiredProviderToken' });
    expect(verifier.check(`bearer ${jwt({ alg: 'ES256', kid: key.keyId }, { iss: key.teamId, iat: nowSec }, other.privateKey)}`, NOW)).toMatchObject({ ok: false });
  });
});

describe('ConnectionTokens (TooManyProviderTokenUpdates)', () => {
  it('takes one change of token at any time, and refuses a second change within 20 minutes of it', () => {
    const connection = new ConnectionTokens();
    expect(connection.use('bearer a', NOW)).toBe(true);
    // A connection opened a minute before its client's refresh: the refresh is its first change.
    expect(connection.use('bearer b', NOW + 60_000)).toBe(true);
    expect(connection.use('bearer c', NOW + 60_000 + PROVIDER_TOKEN_MIN_REFRESH_MS - 1)).toBe(false);
    expect(connection.use('bearer c', NOW + 60_000 + PROVIDER_TOKEN_MIN_REFRESH_MS)).toBe(true);
    // The refused attempt did not count as a change: the 20 minutes run from c's acceptance.
    expect(connection.use('bearer d', NOW + 60_000 + 2 * PROVIDER_TOKEN_MIN_REFRESH_MS - 1)).toBe(false);
  });

  it('refuses a client that signs a token per request at its third token', () => {
    const connection = new ConnectionTokens();
    expect(['bearer a', 'bearer b', 'bearer c'].map((t, i) => connection.use(t, NOW + i))).toEqual([true, true, false]);
  });

  it("still takes the connection's previous token after a change (requests already in flight)", () => {
    const connection = new ConnectionTokens();
    connection.use('bearer a', NOW);
    connection.use('bearer b', NOW + 1);
    expect(connection.use('bearer a', NOW + 2)).toBe(true);
  });

  it('is per connection: another connection may change its token at once', () => {
    const one = new ConnectionTokens();
    one.use('bearer a', NOW);
    one.use('bearer b', NOW + 1);
    const two = new ConnectionTokens();
    expect([two.use('bearer c', NOW + 2), two.use('bearer d', NOW + 3)]).toEqual([true, true]);
  });
});
