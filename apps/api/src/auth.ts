import { hashApiKey, keyAllowsApp, type ApiKeyRow } from '@herald/db';
import { ApiError, fieldError } from './api-error.ts';

export interface KeyLookup {
  findByKey(key: string): Promise<ApiKeyRow | undefined>;
}

/** The key from `authorization: Bearer <key>` (or `x-api-key`). */
export function presentedKey(headers: Record<string, string | string[] | undefined>): string | undefined {
  const auth = headers['authorization'];
  if (typeof auth === 'string') return /^bearer\s+(\S+)$/i.exec(auth.trim())?.[1];
  const header = headers['x-api-key'];
  return typeof header === 'string' && header.length > 0 ? header : undefined;
}

const SWEEP_AT = 10_000;

/** Looks keys up by hash, caching hits and misses for ttlMs (a revoked key stops working within it). */
export function createKeyAuthenticator(keys: KeyLookup, ttlMs: number, now = Date.now) {
  const cache = new Map<string, { until: number; row: Promise<ApiKeyRow | undefined> }>();
  return async (headers: Record<string, string | string[] | undefined>): Promise<ApiKeyRow> => {
    const key = presentedKey(headers);
    if (key === undefined) throw new ApiError(401, 'unauthorized', 'an API key is required: send authorization: Bearer <key>');
    const id = hashApiKey(key);
    let hit = cache.get(id);
    if (hit === undefined || hit.until <= now()) {
      if (cache.size >= SWEEP_AT) cache.clear();
      hit = { until: now() + ttlMs, row: keys.findByKey(key) };
      cache.set(id, hit);
      hit.row.catch(() => cache.delete(id));
    }
    const row = await hit.row;
    if (row === undefined) throw new ApiError(401, 'unauthorized', 'the API key is unknown or revoked');
    return row;
  };
}

/** 403 unless the key may act for the app, naming the field that gave it (`path`). */
export function requireApp(key: ApiKeyRow, app: string, path = 'app'): void {
  if (keyAllowsApp(key, app)) return;
  throw fieldError(403, 'app-not-allowed', path, `this API key (team ${key.team}) may not act for app "${app}"`);
}
