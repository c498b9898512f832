import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * Web Push (libs/providers/PROVIDER-RULES.md, "Web Push"): a browser's PushSubscription is an
 * endpoint URL on its push service plus two keys (RFC 8291 §3): `p256dh`, the browser's P-256
 * public key (65 bytes, uncompressed point), and `auth`, a 16-byte secret. Herald stores the
 * endpoint as the device's token and the keys beside it.
 */
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;

const decodedLength = (value: string): number => Buffer.from(value.replace(/=+$/, ''), 'base64url').length;

function base64urlKey(name: string, bytes: number, check?: (raw: Buffer) => string | undefined) {
  return z.string().superRefine((value, ctx) => {
    if (!BASE64URL.test(value)) {
      ctx.addIssue({ code: 'custom', message: `${name} must be base64url (RFC 4648 §5: letters, digits, "-" and "_")` });
      return;
    }
    const length = decodedLength(value);
    if (length !== bytes) {
      ctx.addIssue({ code: 'custom', message: `${name} must decode to ${bytes} bytes, got ${length}` });
      return;
    }
    const problem = check?.(Buffer.from(value.replace(/=+$/, ''), 'base64url'));
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });
}

/** P-256's prime and curve coefficient b (SEC 2 §2.4.2, secp256r1: y² = x³ − 3x + b mod p). */
const P256_P = 2n ** 256n - 2n ** 224n + 2n ** 192n + 2n ** 96n - 1n;
const P256_B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;
const bigEndian = (bytes: Buffer): bigint => BigInt(`0x${bytes.toString('hex')}`);

/**
 * Why 65 bytes are not an uncompressed P-256 public key (RFC 8291 §3.1, RFC 8292 §3.2): a first
 * byte other than 0x04, or a point not on the curve. The right length alone passed every door,
 * and the push then failed for good at each send ("Public key is not valid for specified curve").
 * About 5 µs (BigInt arithmetic; node:crypto's JWK import takes 25 times as long).
 */
export function p256PointProblem(raw: Buffer): string | undefined {
  if (raw.length !== 65 || raw[0] !== 0x04) return 'must be an uncompressed P-256 point (65 bytes, first byte 0x04)';
  const x = bigEndian(raw.subarray(1, 33));
  const y = bigEndian(raw.subarray(33, 65));
  if (x >= P256_P || y >= P256_P || (y * y - (x * x * x - 3n * x + P256_B)) % P256_P !== 0n) return 'is not a point on the P-256 curve';
  return undefined;
}

/** A subscription's keys, as `PushSubscription.toJSON().keys` gives them. */
export const WebPushKeys = z.strictObject({
  p256dh: base64urlKey('p256dh', 65, (raw) => {
    const problem = p256PointProblem(raw);
    return problem === undefined ? undefined : `p256dh ${problem}`;
  }),
  auth: base64urlKey('auth', 16),
});
export type WebPushKeys = z.infer<typeof WebPushKeys>;

/**
 * A queued push's copy of its subscription's keys: their shape only. Keys no send can use (a
 * p256dh off the curve, stored before the doors checked the point) reach the provider, which finds
 * them unusable and invalidates the subscription (unless the app's pushes fail too); refused here,
 * each such push was parked as a schema error and the subscription drew a park for every job.
 */
export const WebPushKeyShape = z.strictObject({ p256dh: base64urlKey('p256dh', 65), auth: base64urlKey('auth', 16) });

/** The endpoint of a subscription: an https URL of at most 2,048 characters, without credentials or a fragment. */
export function webEndpointProblem(endpoint: string): string | undefined {
  if (endpoint.length > 2048) return `not a Web Push endpoint: at most 2048 characters, got ${endpoint.length}`;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return 'not a Web Push endpoint: expected an https URL';
  }
  if (url.protocol !== 'https:') return `not a Web Push endpoint: expected an https URL, got ${url.protocol.replace(/:$/, '')}`;
  // The URL parser drops or escapes them, so a push service's endpoint never holds one (and PostgreSQL stores no NUL).
  if (/[\s\p{Cc}]/u.test(endpoint)) return 'not a Web Push endpoint: a URL holds no spaces or control characters';
  if (url.username !== '' || url.password !== '') return 'not a Web Push endpoint: the URL must not carry credentials';
  if (url.hash !== '') return 'not a Web Push endpoint: the URL must not carry a fragment';
  return undefined;
}

/**
 * The push services of the browsers people use (Chrome/Edge/Opera via FCM, Firefox via Mozilla
 * autopush, Safari via Apple, legacy Edge via WNS). An app's own allow-list replaces this one.
 * An entry "*.example.com" matches every subdomain of example.com (not example.com itself).
 */
export const DEFAULT_WEB_PUSH_HOSTS: readonly string[] = [
  'fcm.googleapis.com',
  'updates.push.services.mozilla.com',
  'web.push.apple.com',
  '*.push.apple.com',
  '*.notify.windows.com',
];

export function hostAllowed(host: string, allowed: readonly string[]): boolean {
  const h = host.toLowerCase();
  return allowed.some((entry) => {
    const e = entry.toLowerCase();
    return e.startsWith('*.') ? h.endsWith(e.slice(1)) : h === e;
  });
}

/** An IP address range: `network`/`prefix`, as node:net's BlockList.addSubnet takes it. */
export interface AddressRange {
  network: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/**
 * An address ("10.20.0.7") or CIDR range ("10.20.0.0/16", "fd00::/8") as an operator lists the
 * non-public addresses push services may resolve to (WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES); throws
 * naming the entry when it is neither.
 */
export function addressRange(entry: string): AddressRange {
  const [network = '', bits, ...rest] = entry.trim().split('/');
  const version = isIP(network);
  if (version === 0 || rest.length > 0) throw new Error(`"${entry}" is not an IP address or CIDR range (such as 10.20.0.0/16 or fd00::/8)`);
  const max = version === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : Number.NaN;
  if (!(prefix >= 0 && prefix <= max)) throw new Error(`"${entry}": the prefix length must be 0 to ${max}`);
  return { network, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/** RFC 8030 §5.4: a Topic is at most 32 characters of the URL-safe base64 alphabet. */
export const WEB_PUSH_TOPIC = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * Whether every push service is known to take `topic` as it is. Beyond RFC 8030, Apple's push
 * service appears to decode a Topic as base64url: it answers 400 `{"reason":"BadWebPushTopic"}` to
 * ones of 1, 5, 9 … characters, which no bytes encode to, as web-push's users observe ("spike",
 * "new_event", "notification-test", "mail-batch-10" refused; "newEvent", "neueangebote" taken; not
 * in Apple's documentation). Nothing shows it takes the other lengths that are not a multiple of 4
 * (a strict decoder refuses those too), so Herald's choice is a multiple of 4.
 */
export const webPushTopicTakenEverywhere = (topic: string): boolean => WEB_PUSH_TOPIC.test(topic) && topic.length % 4 === 0;

/** RFC 8030 §5.3 Urgency values. */
export const WebPushUrgencies = ['very-low', 'low', 'normal', 'high'] as const;
export type WebPushUrgency = (typeof WebPushUrgencies)[number];

/**
 * A push service refuses a body over 4,096 bytes (RFC 8030 §7.2 asks it to accept at least that).
 * The aes128gcm body is an 86-byte header (salt 16, record size 4, key id length 1, key id 65),
 * one record of plaintext + 1 padding delimiter + 16-byte tag: so at most 3,993 plaintext bytes.
 */
export const WEB_PUSH_MAX_BODY_BYTES = 4096;
export const WEB_PUSH_MAX_PLAINTEXT_BYTES = WEB_PUSH_MAX_BODY_BYTES - 86 - 1 - 16;
