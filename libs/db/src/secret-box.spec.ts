import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox, parseSecretKey, parseSecretKeys } from './secret-box.ts';

const key = randomBytes(32).toString('hex');

describe('secret box (AES-256-GCM)', () => {
  it('round-trips and never stores the plaintext', () => {
    const box = createSecretBox(key);
    const sealed = box.seal('-----BEGIN PRIVATE KEY-----abc', 'apns:chat');
    expect(sealed).not.toContain('PRIVATE');
    expect(box.open(sealed, 'apns:chat')).toBe('-----BEGIN PRIVATE KEY-----abc');
    expect(box.seal('same', 'x')).not.toBe(box.seal('same', 'x'));
  });

  it('refuses another context, another key and a tampered envelope', () => {
    const box = createSecretBox(key);
    const sealed = box.seal('token', 'fcm:chat');
    expect(() => box.open(sealed, 'fcm:other')).toThrow(/cannot be opened/);
    expect(() => createSecretBox(randomBytes(32).toString('base64')).open(sealed, 'fcm:chat')).toThrow(/cannot be opened/);
    const parts = sealed.split('.');
    parts[3] = Buffer.from('evil').toString('base64url');
    expect(() => box.open(parts.join('.'), 'fcm:chat')).toThrow(/cannot be opened/);
    expect(() => box.open('plain', 'fcm:chat')).toThrow(/not a sealed secret/);
  });

  it('accepts 32-byte keys in hex or base64 only', () => {
    expect(parseSecretKey(randomBytes(32).toString('base64url')).length).toBe(32);
    expect(() => parseSecretKey('short')).toThrow(/32 bytes/);
  });

  // A rotation: HERALD_SECRET_KEY=new,old on every service, `herald apps reseal`, then new alone.
  describe('several keys (a rotation)', () => {
    const [oldKey, newKey] = [randomBytes(32).toString('hex'), randomBytes(32).toString('base64')];
    const underOld = createSecretBox(oldKey).seal('p8 key', 'apns:chat');

    it('opens what the earlier keys sealed, seals by the first, and reseals only what the first did not seal', () => {
      const ring = createSecretBox(`${newKey}, ${oldKey}`);
      expect(ring.open(underOld, 'apns:chat')).toBe('p8 key');
      const sealed = ring.seal('service account', 'fcm:chat');
      expect(createSecretBox(newKey).open(sealed, 'fcm:chat')).toBe('service account');
      expect(() => createSecretBox(oldKey).open(sealed, 'fcm:chat')).toThrow(/cannot be opened/);
      const resealed = ring.reseal(underOld, 'apns:chat');
      expect(resealed === undefined ? undefined : createSecretBox(newKey).open(resealed, 'apns:chat')).toBe('p8 key');
      expect(ring.reseal(sealed, 'fcm:chat')).toBeUndefined();
      // The context still binds an envelope to its app, whichever key opens it.
      expect(() => ring.open(underOld, 'apns:other')).toThrow(/cannot be opened/);
      expect(() => ring.reseal(createSecretBox(randomBytes(32).toString('hex')).seal('x', 'apns:chat'), 'apns:chat')).toThrow(/cannot be opened/);
    });

    it('names the entry of the list that is not a key', () => {
      expect(parseSecretKeys(`${newKey},${oldKey}`)).toHaveLength(2);
      expect(() => parseSecretKeys(`${newKey},short`)).toThrow('key 2 of 2: the secret key must be 32 bytes');
      expect(() => parseSecretKeys(`${newKey},`)).toThrow(/empty entry/);
    });
  });
});
