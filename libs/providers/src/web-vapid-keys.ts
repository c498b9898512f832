import type { VapidKeyPair } from './web-settings.ts';

/**
 * A new VAPID key pair (RFC 8292), as `web-push`'s generateVAPIDKeys() makes it: base64url, a
 * 65-byte uncompressed P-256 public key and its 32-byte private scalar. Loads web-push on first
 * call, like the provider factories. Used by the admin API and `herald apps vapid` (W1, issue 21).
 */
export async function generateVapidKeys(): Promise<VapidKeyPair> {
  const { publicKey, privateKey } = (await import('web-push')).default.generateVAPIDKeys();
  return { publicKey, privateKey };
}
