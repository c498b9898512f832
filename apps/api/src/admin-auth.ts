import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuditActor, OperatorKey } from '@herald/db';
import { logSummary, type Logger } from '@herald/logging';
import type { FastifyInstance } from 'fastify';
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

/** Failed admin authentications from one address within ADMIN_GUESS_WINDOW_MS after which it is refused. */
export const ADMIN_GUESS_LIMIT = 10;
export const ADMIN_GUESS_WINDOW_MS = 60_000;
/** How long an address past the limit is answered 429 on /admin/ (any key, the right one too). */
export const ADMIN_GUESS_BLOCK_MS = 60_000;
/** Most addresses counted at once; past it, ones with nothing left to count go first, then the oldest tenth. */
const MAX_TRACKED = 10_000;

interface Tally {
  windowStart: number;
  failures: number;
  blockedUntil: number;
}

/**
 * Failed authentications counted per address, in this process only: past `limit` within `windowMs`,
 * the address is refused for `blockMs`. `blocked` is told when that starts.
 */
export function createGuessLimit(opts: {
  limit?: number;
  windowMs?: number;
  blockMs?: number;
  now?: () => number;
  blocked?: (address: string, failures: number, forMs: number) => void;
} = {}) {
  const { limit = ADMIN_GUESS_LIMIT, windowMs = ADMIN_GUESS_WINDOW_MS, blockMs = ADMIN_GUESS_BLOCK_MS, now = Date.now } = opts;
  const tallies = new Map<string, Tally>();
  const makeRoom = (t: number): void => {
    for (const [address, v] of tallies) if (v.blockedUntil <= t && v.windowStart + windowMs <= t) tallies.delete(address);
    for (const address of tallies.keys()) {
      if (tallies.size < MAX_TRACKED * 0.9) break;
      tallies.delete(address);
    }
  };
  return {
    /** How much longer this address is refused; 0 when it is not. */
    refusedForMs(address: string): number {
      return Math.max(0, (tallies.get(address)?.blockedUntil ?? 0) - now());
    },
    failed(address: string): void {
      const t = now();
      let tally = tallies.get(address);
      if (tally === undefined || tally.windowStart + windowMs <= t) {
        if (tally === undefined && tallies.size >= MAX_TRACKED) makeRoom(t);
        tally = { windowStart: t, failures: 0, blockedUntil: tally?.blockedUntil ?? 0 };
        tallies.set(address, tally);
      }
      tally.failures += 1;
      if (tally.failures < limit) return;
      // Counted afresh from the end of the refusal.
      tallies.set(address, { windowStart: t + blockMs, failures: 0, blockedUntil: t + blockMs });
      opts.blocked?.(address, tally.failures, blockMs);
    },
  };
}

export type GuessLimit = ReturnType<typeof createGuessLimit>;

const isAdmin = (url: string | undefined): boolean => url?.startsWith('/admin/') === true;

/**
 * Bounds guessing at the admin routes: an address whose keys were refused ADMIN_GUESS_LIMIT times
 * within ADMIN_GUESS_WINDOW_MS is answered 429 (with Retry-After) on /admin/ for
 * ADMIN_GUESS_BLOCK_MS, before any key is checked. Only a presented key that was refused counts
 * (a request without one is no guess). Per process and per connecting address: behind a proxy
 * that is the proxy's, so its clients share one count. Register before the admin routes.
 */
export function limitAdminGuesses(app: FastifyInstance, logger: Logger, limit?: GuessLimit): void {
  const blocks = logSummary(logger, 'warn', 'admin routes refused to an address (429) after repeated failed authentications');
  const guesses =
    limit ?? createGuessLimit({ blocked: (remote, failures, forMs) => blocks.note('blocked', { remote, failures, forMs }) });
  app.addHook('onRequest', async (req, reply) => {
    if (!isAdmin(req.routeOptions.url)) return;
    const waitMs = guesses.refusedForMs(req.ip);
    if (waitMs === 0) return;
    void reply.header('retry-after', String(Math.ceil(waitMs / 1000)));
    if (!req.raw.complete) void reply.header('connection', 'close');
    throw new ApiError(429, 'too-many-attempts', `too many failed admin authentications from this address: retry in ${Math.ceil(waitMs / 1000)} s`);
  });
  app.addHook('onResponse', async (req, reply) => {
    if (reply.statusCode === 401 && isAdmin(req.routeOptions.url) && presentedKey(req.headers) !== undefined) guesses.failed(req.ip);
  });
}
