import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Thrown when a secret cannot be sealed or opened: `bad-key`, the key itself is not 32 bytes;
 * `not-sealed`, the stored value is not an envelope at all (the record's fault, whatever the key);
 * `unopened`, an envelope this key does not open (another HERALD_SECRET_KEY, or tampered or foreign).
 */
export class SecretBoxError extends Error {
  override readonly name = 'SecretBoxError';
  constructor(
    message: string,
    readonly code: 'bad-key' | 'not-sealed' | 'unopened' = 'bad-key',
  ) {
    super(message);
  }
}

/** Seals short secrets (keys, tokens, service-account JSON) for storage at rest. */
export interface SecretBox {
  /** `context` (e.g. "apns:chat") is authenticated, so an envelope cannot be moved to another app. */
  seal(plaintext: string, context: string): string;
  /** Opens an envelope sealed by any of the box's keys. */
  open(envelope: string, context: string): string;
  /**
   * The envelope sealed again by the box's current (first) key, or undefined when that key sealed
   * it already: a key rotation's `herald apps reseal`. Throws as `open` does.
   */
  reseal(envelope: string, context: string): string | undefined;
}

const VERSION = 'v1';
const IV_BYTES = 12;

/** HERALD_SECRET_KEY: 32 bytes as 64 hex characters or as base64 / base64url. */
export function parseSecretKey(raw: string): Buffer {
  const text = raw.trim();
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
  if (key.length !== 32) throw new SecretBoxError('the secret key must be 32 bytes (64 hex characters or base64)');
  return key;
}

/**
 * HERALD_SECRET_KEY: one key, or several separated by commas during a rotation: the first seals,
 * each opens (what the earlier ones sealed is sealed again by the first with `herald apps reseal`).
 */
export function parseSecretKeys(raw: string): Buffer[] {
  const entries = raw.split(',').map((k) => k.trim());
  if (entries.some((k) => k === '')) throw new SecretBoxError('the secret key list has an empty entry (keys are separated by single commas)');
  return entries.map((k, i) => {
    try {
      return parseSecretKey(k);
    } catch (err) {
      throw entries.length === 1 ? err : new SecretBoxError(`key ${i + 1} of ${entries.length}: ${(err as Error).message}`);
    }
  });
}

/**
 * AES-256-GCM with a random 96-bit IV per seal: `v1.<iv>.<tag>.<ciphertext>` in base64url. With
 * several keys (a rotation), the first seals and an envelope is opened by whichever of them sealed
 * it: the tag tells them apart, and credentials are opened once per load, not per push.
 */
export function createSecretBox(rawKeys: string): SecretBox {
  const [current, ...earlier] = parseSecretKeys(rawKeys) as [Buffer, ...Buffer[]];
  const openWith = (key: Buffer, envelope: string, context: string): string | undefined => {
    const [version, iv, tag, body] = envelope.split('.');
    if (version !== VERSION || iv === undefined || tag === undefined || body === undefined) throw new SecretBoxError('not a sealed secret', 'not-sealed');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  };
  const unopened = (): SecretBoxError =>
    new SecretBoxError('the secret cannot be opened: wrong HERALD_SECRET_KEY, or it was altered or belongs to another app', 'unopened');
  const seal = (plaintext: string, context: string): string => {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', current, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  };
  const openEarlier = (envelope: string, context: string): string => {
    for (const key of earlier) {
      const opened = openWith(key, envelope, context);
      if (opened !== undefined) return opened;
    }
    throw unopened();
  };
  return {
    seal,
    open: (envelope, context) => openWith(current, envelope, context) ?? openEarlier(envelope, context),
    reseal: (envelope, context) => (openWith(current, envelope, context) !== undefined ? undefined : seal(openEarlier(envelope, context), context)),
  };
}
