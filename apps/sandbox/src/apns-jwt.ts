import { verify, type KeyObject } from 'node:crypto';

/** Apple accepts a provider token for one hour after its `iat`. */
export const PROVIDER_TOKEN_MAX_AGE_SECONDS = 3600;
/**
 * Apple, "Establishing a token-based connection to APNs": "Refresh your token no more than once
 * every 20 minutes and no less than once every 60 minutes. APNs reports an error if you use a new
 * token more than once in 20 minutes on the same connection" (429 TooManyProviderTokenUpdates).
 */
export const PROVIDER_TOKEN_MIN_REFRESH_MS = 20 * 60_000;
/** Tolerated clock skew for an `iat` slightly in the future. */
const FUTURE_SKEW_SECONDS = 300;

export type ProviderTokenReason = 'MissingProviderToken' | 'InvalidProviderToken' | 'ExpiredProviderToken';
export type ProviderTokenCheck = { ok: true; iat: number } | { ok: false; reason: ProviderTokenReason };

export interface ProviderTokenKey {
  publicKey: KeyObject;
  keyId: string;
  teamId: string;
}

/** One key, or every key the sandbox knows (looked up by the token's `kid`). */
export type ProviderTokenKeys = ProviderTokenKey | { find(keyId: string): ProviderTokenKey | undefined };

const keyFor = (keys: ProviderTokenKeys, keyId: unknown): ProviderTokenKey | undefined => {
  if (typeof keyId !== 'string') return undefined;
  if ('find' in keys) return keys.find(keyId);
  return keys.keyId === keyId ? keys : undefined;
};

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The JWT from an `authorization: bearer <jwt>` header, or undefined when there is none. */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const match = /^bearer\s+(\S+)\s*$/i.exec(authorization);
  return match?.[1];
}

/**
 * Verify an APNs provider token as Apple does: ES256 signed by the team's .p8 key,
 * header `kid` = key id, claim `iss` = team id, `iat` no older than one hour.
 */
export function verifyProviderToken(authorization: string | undefined, keys: ProviderTokenKeys, nowMs = Date.now()): ProviderTokenCheck {
  const jwt = bearerToken(authorization);
  if (jwt === undefined) return { ok: false, reason: 'MissingProviderToken' };
  const parts = jwt.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'InvalidProviderToken' };
  const [headerPart = '', claimsPart = '', signaturePart = ''] = parts;
  const header = decodeJson(headerPart);
  const claims = decodeJson(claimsPart);
  if (header === undefined || claims === undefined) return { ok: false, reason: 'InvalidProviderToken' };
  const key = keyFor(keys, header['kid']);
  if (header['alg'] !== 'ES256' || key === undefined || claims['iss'] !== key.teamId) {
    return { ok: false, reason: 'InvalidProviderToken' };
  }
  const signature = Buffer.from(signaturePart, 'base64url');
  const signed = verify('sha256', Buffer.from(`${headerPart}.${claimsPart}`), { key: key.publicKey, dsaEncoding: 'ieee-p1363' }, signature);
  if (!signed) return { ok: false, reason: 'InvalidProviderToken' };
  const iat = claims['iat'];
  if (typeof iat !== 'number' || !Number.isFinite(iat)) return { ok: false, reason: 'InvalidProviderToken' };
  const nowSeconds = Math.floor(nowMs / 1000);
  if (iat > nowSeconds + FUTURE_SKEW_SECONDS) return { ok: false, reason: 'InvalidProviderToken' };
  if (nowSeconds - iat > PROVIDER_TOKEN_MAX_AGE_SECONDS) return { ok: false, reason: 'ExpiredProviderToken' };
  return { ok: true, iat };
}

/**
 * Remembers tokens whose signature checked out, as APNs does for a connection's token,
 * so a busy client does not pay an ECDSA verify per request. Age is still checked every time.
 */
export class ProviderTokenVerifier {
  private readonly verified = new Map<string, number>();

  constructor(private readonly key: ProviderTokenKeys, private readonly maxEntries = 1000) {}

  check(authorization: string | undefined, nowMs = Date.now()): ProviderTokenCheck {
    const iat = authorization === undefined ? undefined : this.verified.get(authorization);
    if (iat !== undefined) {
      return Math.floor(nowMs / 1000) - iat > PROVIDER_TOKEN_MAX_AGE_SECONDS ? { ok: false, reason: 'ExpiredProviderToken' } : { ok: true, iat };
    }
    const result = verifyProviderToken(authorization, this.key, nowMs);
    if (result.ok && authorization !== undefined) {
      if (this.verified.size >= this.maxEntries) this.verified.clear();
      this.verified.set(authorization, result.iat);
    }
    return result;
  }
}

/**
 * The provider tokens one HTTP/2 connection has sent. Its first token is not an update; a change
 * to a token new to the connection less than 20 minutes after its last change is refused
 * (TooManyProviderTokenUpdates: "more than once in 20 minutes"), so a client that refreshes on
 * time passes even on a connection opened just before its refresh, and one that signs a token per
 * request fails at its third. The connection's earlier tokens still pass (until they expire), so
 * requests already in flight with the previous token when a client refreshes are not refused.
 */
export class ConnectionTokens {
  /** The tokens this connection has used, newest last; a token older than an hour is refused anyway, so a few suffice. */
  private readonly used: string[] = [];
  private lastChangeAtMs: number | undefined;

  /** Whether this connection may use `token` now (remembering it if it is new). */
  use(token: string, nowMs = Date.now()): boolean {
    if (this.used.includes(token)) return true;
    if (this.used.length > 0) {
      if (this.lastChangeAtMs !== undefined && nowMs - this.lastChangeAtMs < PROVIDER_TOKEN_MIN_REFRESH_MS) return false;
      this.lastChangeAtMs = nowMs;
    }
    this.used.push(token);
    if (this.used.length > 4) this.used.shift();
    return true;
  }
}
