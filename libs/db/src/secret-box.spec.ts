import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox, parseSecretKey } from './secret-box.ts';

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
});
