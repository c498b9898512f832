import { createPublicKey, verify } from 'node:crypto';
import { UNREACHABLE_SUBJECT, vapidSubjectProblem } from '@herald/contracts';

/**
 * RFC 8292 §2: `exp` "MUST NOT be more than 24 hours from the time of the request" (Apple: "more than
 * one day into the future" is BadJwtToken; Mozilla's autopush: exp > now + one day is
 * FutureExpirationToken): no allowance ahead. Nor behind: a JWT whose exp has passed is expired
 * (RFC 7519 §4.1.4: "MUST NOT be accepted for processing" on or after it; Apple lists an expired
 * JWT as BadJwtToken). Autopush's JWT library happens to allow 60 s; no document promises it.
 */
const MAX_AHEAD_S = 24 * 3600;

export interface VapidClaims {
  aud: string;
  exp: number;
  sub: string;
}

/**
 * Which push service a simulated browser's subscription belongs to: `generic` answers as RFC 8292
 * does (Chrome's FCM and Firefox's autopush answer so), `apple` as Apple's web.push.apple.com
 * documents (Safari).
 */
export const WebPushServices = ['generic', 'apple'] as const;
export type WebPushService = (typeof WebPushServices)[number];

/**
 * A refusal; `answer` is the exact body to send when the push service's own words are known (Apple's
 * `{"reason":"BadJwtToken"}`). `keyMismatch`: signed with another key than the subscription's.
 */
export type VapidCheck =
  | { ok: true; claims: VapidClaims; publicKey: string }
  | { ok: false; status: 400 | 401 | 403; reason: string; answer?: string; keyMismatch?: true };

const fail = (reason: string): VapidCheck => ({ ok: false, status: 401, reason });

/** `vapid t=<jwt>, k=<key>` (RFC 8292 §3) as its two parameters. */
function parseAuthorization(header: string | undefined): { t: string; k: string } | undefined {
  const m = /^vapid\s+(.*)$/i.exec(header?.trim() ?? '');
  if (m === null) return undefined;
  const params = new Map<string, string>();
  for (const part of (m[1] ?? '').split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) params.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const t = params.get('t');
  const k = params.get('k');
  return t === undefined || k === undefined ? undefined : { t, k };
}

/** A raw uncompressed P-256 point (base64url) as a public key object. */
function p256Key(k: string) {
  const raw = Buffer.from(k, 'base64url');
  if (raw.length !== 65 || raw[0] !== 4) return undefined;
  try {
    return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33).toString('base64url') }, format: 'jwk' });
  } catch {
    return undefined;
  }
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function claimsProblem(claims: Record<string, unknown>, origin: string, nowS: number): string | undefined {
  if (claims['aud'] !== origin) return `aud must be the push resource's origin ${origin}, got ${JSON.stringify(claims['aud'])} (RFC 8292 §2)`;
  const exp = claims['exp'];
  if (typeof exp !== 'number' || !Number.isInteger(exp)) return 'exp must be an integer (RFC 8292 §2)';
  if (exp <= nowS) return 'the JWT has expired (exp is in the past)';
  if (exp > nowS + MAX_AHEAD_S) return `exp is ${exp - nowS} s ahead, more than 24 hours from the request (RFC 8292 §2)`;
  return subjectProblem(claims['sub']);
}

/**
 * The `sub` claim: required, a `mailto:` URL naming an address or an `https:` URL (Mozilla's autopush
 * documentation: the assertion "must contain a sub field containing the publishing contact information
 * as a valid URI designator"; Apple's: BadJwtToken when "the JWT subject claim isn't a URL or mailto:";
 * RFC 8292 §2.1). Whether its host is reachable is judged by Apple's push service only (asService).
 */
function subjectProblem(sub: unknown): string | undefined {
  if (sub === undefined) return 'sub is missing: a mailto: or https: contact is required (RFC 8292 §2.1, Mozilla, Apple)';
  if (typeof sub !== 'string') return 'sub must be a mailto: or https: URL (RFC 8292 §2.1), got a non-string';
  const problem = vapidSubjectProblem(sub);
  return problem === undefined || problem.startsWith(UNREACHABLE_SUBJECT) ? undefined : `sub ${problem}`;
}

/**
 * Verify a request's VAPID Authorization (RFC 8292): ES256 signature with the key `k`, `aud` the
 * endpoint's origin, `exp` not past and at most 24 h ahead, `sub` a mailto: address or https: URL (else 401). A
 * subscription bound to an applicationServerKey answers 403 for any other key, as push services do.
 * `asService` then gives Apple's answers where the subscription is Safari's.
 */
export function checkVapid(header: string | undefined, origin: string, boundKey: string | undefined, nowS = Math.floor(Date.now() / 1000)): VapidCheck {
  const auth = parseAuthorization(header);
  if (auth === undefined) return fail('missing or malformed Authorization: expected "vapid t=<JWT>, k=<public key>" (RFC 8292 §3)');
  const key = p256Key(auth.k);
  if (key === undefined) return fail('k must be an uncompressed P-256 public key, base64url (RFC 8292 §3.2)');
  if (boundKey !== undefined && auth.k !== boundKey) {
    return { ok: false, status: 403, reason: 'the VAPID key does not match the applicationServerKey this subscription was made with', keyMismatch: true };
  }
  const [h, p, s, extra] = auth.t.split('.');
  if (h === undefined || p === undefined || s === undefined || extra !== undefined) return fail('t must be a JWS compact serialization');
  const jose = decodeJson(h);
  if (jose?.['alg'] !== 'ES256') return fail('the JWT must be signed with ES256 (RFC 8292 §2)');
  const ok = verify('sha256', Buffer.from(`${h}.${p}`, 'latin1'), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'));
  if (!ok) return fail('the JWT signature does not verify with k');
  const claims = decodeJson(p);
  if (claims === undefined) return fail('the JWT claims are not a JSON object');
  const problem = claimsProblem(claims, origin, nowS);
  if (problem !== undefined) return fail(problem);
  return { ok: true, claims: claims as unknown as VapidClaims, publicKey: auth.k };
}

const appleAnswer = (reason: string, appleReason: 'BadJwtToken' | 'VapidPkHashMismatch'): VapidCheck => ({
  ok: false,
  status: appleReason === 'BadJwtToken' ? 403 : 400,
  reason,
  answer: JSON.stringify({ reason: appleReason }),
});

/**
 * A check as the subscription's push service answers it. Apple's ("Sending web push notifications in
 * web apps and browsers", its error table) answers every JWT problem (missing, signed with the wrong
 * key, a subject that isn't a URL or mailto:, another audience, an expiry over a day ahead) 403
 * `{"reason":"BadJwtToken"}`. Beyond its documentation, as observed by web-push's users (web-push's
 * README, web-push-libs/web-push #947), it also answers so a subject on a host it cannot reach
 * (https://localhost, mailto:ops@localhost, an IP literal or a single-label host), and a key other
 * than the subscription's 400 `{"reason":"VapidPkHashMismatch"}` (as web-push's users report it). Google's and Mozilla's services do not
 * judge the subject's host, so a `generic` subscription takes it.
 */
export function asService(check: VapidCheck, service: WebPushService): VapidCheck {
  if (service === 'generic') return check;
  if (!check.ok) return appleAnswer(check.reason, check.keyMismatch === true ? 'VapidPkHashMismatch' : 'BadJwtToken');
  const problem = vapidSubjectProblem(check.claims.sub);
  return problem === undefined ? check : appleAnswer(`sub ${problem} (Apple's push service, as observed)`, 'BadJwtToken');
}
