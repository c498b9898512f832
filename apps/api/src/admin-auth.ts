import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuditActor, OperatorKey } from '@herald/db';
import { ApiError } from './api-error.ts';
import { presentedKey } from './auth.ts';

export interface OperatorKeyLookup {
  findOperatorByKey(key: string): Promise<OperatorKey | undefined>;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
const SWEEP_AT = 10_000;

/** The bootstrap key (HERALD_ADMIN_KEY) as an audit actor: it names no person. */
export const ADMIN_KEY_ACTOR: AuditActor = { kind: 'admin-key', id: 'HERALD_ADMIN_KEY', name: 'admin key' };

/**
 * Admin routes: an operator key (herald keys create --operator; who acted goes into the audit log),
 * or the bootstrap HERALD_ADMIN_KEY compared in constant time. A team key is never enough.
 * Operator lookups (and misses) are cached for ttlMs, like team keys.
 */
export function createAdminAuthenticator(
  operators: OperatorKeyLookup,
  adminKey: string | undefined,
  ttlMs: number,
  now = Date.now,
) {
  const cache = new Map<string, { until: number; found: Promise<OperatorKey | undefined> }>();
  return async (headers: Record<string, string | string[] | undefined>): Promise<AuditActor> => {
    const key = presentedKey(headers);
    if (key === undefined)
      throw new ApiError(
        401,
        'unauthorized',
        'an operator key is required: send authorization: Bearer <operator key> (herald keys create --operator <name>)',
      );
    if (adminKey !== undefined && timingSafeEqual(digest(key), digest(adminKey))) return ADMIN_KEY_ACTOR;
    const id = digest(key).toString('hex');
    let hit = cache.get(id);
    if (hit === undefined || hit.until <= now()) {
      if (cache.size >= SWEEP_AT) cache.clear();
      hit = { until: now() + ttlMs, found: operators.findOperatorByKey(key) };
      cache.set(id, hit);
      hit.found.catch(() => cache.delete(id));
    }
    const operator = await hit.found;
    if (operator === undefined)
      throw new ApiError(401, 'unauthorized', 'the operator key (or HERALD_ADMIN_KEY) is unknown, revoked or wrong');
    return { kind: 'operator', id: operator.id, name: operator.name };
  };
}
