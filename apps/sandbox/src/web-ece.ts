import { createDecipheriv, createECDH, createHmac, type ECDH } from 'node:crypto';

/**
 * RFC 8291 (Message Encryption for Web Push) over RFC 8188 (aes128gcm), decrypting side, written
 * from the RFCs with node:crypto, so the sandbox does not judge web-push with web-push's own code.
 */

const HEADER_FIXED = 16 + 4 + 1;
const TAG_BYTES = 16;

const hmac = (key: Buffer, data: Buffer): Buffer => createHmac('sha256', key).update(data).digest();
/** HKDF-Expand for at most one block (RFC 5869 §2.3): T(1) truncated. */
const expand = (prk: Buffer, info: Buffer, length: number): Buffer => hmac(prk, Buffer.concat([info, Buffer.from([1])])).subarray(0, length);

export type Decrypted = { ok: true; plaintext: Buffer } | { ok: false; reason: string };

/** The user agent's side of a subscription: its ECDH key pair and auth secret. */
export interface SubscriptionSecrets {
  ecdh: ECDH;
  auth: Buffer;
}

/** Decrypt an aes128gcm Web Push body (one record, RFC 8291 §4). */
export function decryptWebPush(body: Buffer, secrets: SubscriptionSecrets): Decrypted {
  if (body.length < HEADER_FIXED) return { ok: false, reason: 'body shorter than the aes128gcm header (RFC 8188 §2.1)' };
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20] ?? 0;
  if (idlen !== 65) return { ok: false, reason: `keyid must be the 65-byte application server public key (RFC 8291 §4), got ${idlen} bytes` };
  const asPublic = body.subarray(HEADER_FIXED, HEADER_FIXED + idlen);
  const record = body.subarray(HEADER_FIXED + idlen);
  if (rs < 18) return { ok: false, reason: `record size ${rs} is below 18 (RFC 8188 §2.1)` };
  if (record.length > rs) return { ok: false, reason: 'Web Push allows a single record (RFC 8291 §4): the body is longer than the record size' };
  if (record.length < TAG_BYTES + 1) return { ok: false, reason: 'record shorter than its authentication tag' };
  let ecdhSecret: Buffer;
  try {
    ecdhSecret = secrets.ecdh.computeSecret(asPublic);
  } catch {
    return { ok: false, reason: 'keyid is not a P-256 public key' };
  }
  const uaPublic = secrets.ecdh.getPublicKey();
  // RFC 8291 §3.4: IKM from the ECDH secret, keyed by the auth secret; then RFC 8188 §2.2–2.3.
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0', 'latin1'), uaPublic, asPublic]);
  const ikm = expand(hmac(secrets.auth, ecdhSecret), keyInfo, 32);
  const prk = hmac(salt, ikm);
  const cek = expand(prk, Buffer.from('Content-Encoding: aes128gcm\0', 'latin1'), 16);
  const nonce = expand(prk, Buffer.from('Content-Encoding: nonce\0', 'latin1'), 12);
  let padded: Buffer;
  try {
    const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
    decipher.setAuthTag(record.subarray(record.length - TAG_BYTES));
    padded = Buffer.concat([decipher.update(record.subarray(0, record.length - TAG_BYTES)), decipher.final()]);
  } catch {
    return { ok: false, reason: 'decryption failed: wrong keys, auth secret or salt (RFC 8291 §3.4)' };
  }
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end -= 1;
  if (end < 0 || padded[end] !== 2) return { ok: false, reason: 'the last record must end with the 0x02 padding delimiter (RFC 8188 §2)' };
  return { ok: true, plaintext: padded.subarray(0, end) };
}

/** A fresh P-256 key pair for a simulated browser subscription. */
export function newSubscriptionKeys(): ECDH {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return ecdh;
}
