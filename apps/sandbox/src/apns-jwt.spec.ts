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
  it('refuses a connection a new token less than 20 minutes after its last new one, and takes it at 20 minutes', () => {
    const connection = new ConnectionTokens();
    expect(connection.use('bearer a', NOW)).toBe(true);
    expect(connection.use('bearer a', NOW + 60_000)).toBe(true);
    expect(connection.use('bearer b', NOW + PROVIDER_TOKEN_MIN_REFRESH_MS - 1)).toBe(false);
    expect(connection.use('bearer b', NOW + PROVIDER_TOKEN_MIN_REFRESH_MS)).toBe(true);
    // The refused token did not count as an update: the 20 minutes run from b's acceptance.
    expect(connection.use('bearer c', NOW + 2 * PROVIDER_TOKEN_MIN_REFRESH_MS - 1)).toBe(false);
  });

  it("still takes the connection's previous token after a refresh (requests already in flight)", () => {
    const connection = new ConnectionTokens();
    connection.use('bearer a', NOW);
    connection.use('bearer b', NOW + PROVIDER_TOKEN_MIN_REFRESH_MS);
    expect(connection.use('bearer a', NOW + PROVIDER_TOKEN_MIN_REFRESH_MS + 1)).toBe(true);
  });

  it('is per connection: another connection may start with any token', () => {
    const one = new ConnectionTokens();
    one.use('bearer a', NOW);
    expect(new ConnectionTokens().use('bearer b', NOW + 1)).toBe(true);
  });
});
