import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { OperatorKey } from '@herald/db';
import type { Logger } from '@herald/logging';

/** Where operator keys are looked up (the api_keys table, kind operator). */
export interface OperatorKeys {
  findOperatorByKey(key: string): Promise<OperatorKey | undefined>;
}

/** Who is asking, and how they proved it: a bearer header (scripts) or the dashboard's session cookie. */
export interface Operator extends OperatorKey {
  via: 'bearer' | 'session';
}

export const SESSION_COOKIE = 'herald_operator_session';
const SESSION_MAX_AGE_S = 12 * 60 * 60;
const MAX_SESSIONS = 10_000;
/**
 * While the database cannot be asked, a key it confirmed within this long is still accepted: the
 * on-call operator keeps the dashboard through a PostgreSQL outage, and sees its
 * database-unreachable alarm. A revocation cannot be checked meanwhile anyway (it is written to that
 * same database); it takes effect at the first answer. A key not confirmed within it is refused
 * with 503 (OperatorKeysUnreachable), never accepted unseen.
 */
export const OPERATOR_STALE_GRACE_MS = 15 * 60_000;

/** The database that holds operator keys did not answer, and this key has no recent confirmation to fall back on. */
export class OperatorKeysUnreachable extends Error {
  constructor(cause: unknown) {
    super('the database that holds operator keys is unreachable', { cause });
    this.name = 'OperatorKeysUnreachable';
  }
}

/**
 * An operator key as `herald keys create --operator` mints it (api-key-repository.ts): `hko_`, the
 * key's 12-hex id, `_`, 32 random bytes in base64url. Anything else is refused without a query.
 */
export const OPERATOR_KEY_FORMAT = /^hko_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/;

/** Key lookups waiting for the one in flight beyond which a key not confirmed before is refused at once. */
export const MAX_WAITING_LOOKUPS = 8;
/** Longest a key lookup waits for its turn before it is refused with 503 (OperatorKeysBusy). */
export const LOOKUP_WAIT_MS = 2_000;

/** Too many keys are being checked at once (a flood of made-up keys, say): this one was not, try again. */
export class OperatorKeysBusy extends Error {
  constructor() {
    super('too many operator keys are being checked at once: try again in a moment');
    this.name = 'OperatorKeysBusy';
  }
}

/**
 * One key lookup at a time, so the monitor's small database pool always has a connection left for
 * its alarms lease and its other reads, whatever anyone sends to the port. A key the database
 * confirmed before (an operator's) goes ahead of unknown ones and is never refused for the queue's
 * length; every waiter gives up after `waitMs`.
 */
function oneLookupAtATime(maxWaiting: number, waitMs: number) {
  let running = false;
  const known: Array<() => void> = [];
  const unknown: Array<() => void> = [];
  const release = (): void => {
    const next = known.shift() ?? unknown.shift();
    if (next === undefined) running = false;
    else next();
  };
  const turn = (queue: Array<() => void>): Promise<void> =>
    new Promise((resolve, reject) => {
      const go = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const at = queue.indexOf(go);
        if (at >= 0) queue.splice(at, 1);
        reject(new OperatorKeysBusy());
      }, waitMs);
      timer.unref();
      queue.push(go);
    });
  return async <T>(confirmedBefore: boolean, work: () => Promise<T>): Promise<T> => {
    if (running) {
      if (!confirmedBefore && unknown.length >= maxWaiting) throw new OperatorKeysBusy();
      // Handed the slot by release(): `running` stays true.
      await turn(confirmedBefore ? known : unknown);
    } else running = true;
    try {
      return await work();
    } finally {
      release();
    }
  };
}

interface Session {
  /** The key the session was opened with, kept in this process only: its revocation ends the session. */
  key: string;
  expiresAt: number;
}

const bearerOf = (req: IncomingMessage): string | undefined => {
  const auth = req.headers['authorization'];
  return typeof auth === 'string' ? /^bearer\s+(\S+)$/i.exec(auth.trim())?.[1] : undefined;
};

export const cookieOf = (req: IncomingMessage, name: string): string | undefined => {
  for (const part of (req.headers['cookie'] ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
};

/**
 * Operator authentication for the dashboard: `authorization: Bearer <operator key>`, or a session
 * opened by POST /api/login with the key (an HttpOnly, SameSite=Strict cookie holding a random
 * token; sessions live in this process for 12 hours). Key lookups are cached for `ttlMs`, so a
 * revoked key stops working, sessions included, within it. While the database does not answer, a
 * key it confirmed within OPERATOR_STALE_GRACE_MS keeps working; the outage is logged when it
 * starts and when it ends, not per request. A key not in the minted format is refused without a
 * query, and one lookup runs at a time (oneLookupAtATime): anyone who reaches the port cannot take
 * the pool the alarms lease needs by sending made-up keys.
 */
export function createOperatorGate(
  keys: OperatorKeys,
  ttlMs: number,
  logger: Logger,
  now: () => number = Date.now,
  limits: { maxWaiting?: number; waitMs?: number } = {},
) {
  const oneAtATime = oneLookupAtATime(limits.maxWaiting ?? MAX_WAITING_LOOKUPS, limits.waitMs ?? LOOKUP_WAIT_MS);
  const lookups = new Map<string, { until: number; found: Promise<OperatorKey | undefined> }>();
  const sessions = new Map<string, Session>();
  /** When the database last confirmed each live key presented; never an unknown key, so no more entries than operator keys. */
  const confirmed = new Map<string, { operator: OperatorKey; at: number }>();
  /** When the current spell of failed lookups began; undefined while the database answers. */
  let unreachableSince: number | undefined;
  /** The operator the database last confirmed this key for, if within OPERATOR_STALE_GRACE_MS. */
  const withinGraceOf = (key: string): OperatorKey | undefined => {
    const last = confirmed.get(key);
    return last !== undefined && now() - last.at < OPERATOR_STALE_GRACE_MS ? last.operator : undefined;
  };
  const ask = async (key: string): Promise<OperatorKey | undefined> => {
    let found: OperatorKey | undefined;
    try {
      found = await keys.findOperatorByKey(key);
    } catch (err) {
      if (unreachableSince === undefined) {
        unreachableSince = now();
        logger.warn(
          { err, graceMs: OPERATOR_STALE_GRACE_MS },
          'operator keys cannot be checked: the database does not answer; keys it confirmed within the grace keep the dashboard open, others get 503',
        );
      }
      const kept = withinGraceOf(key);
      if (kept !== undefined) return kept;
      throw new OperatorKeysUnreachable(err);
    }
    if (unreachableSince !== undefined) {
      logger.info({ unreachableForMs: now() - unreachableSince }, 'operator keys are checked against the database again');
      unreachableSince = undefined;
    }
    if (found === undefined) confirmed.delete(key);
    else confirmed.set(key, { operator: found, at: now() });
    return found;
  };
  /**
   * A key the database confirmed within the grace is let in when its lookup cannot get a turn
   * while the database does not answer: the one lookup running may wait out a connect timeout
   * (15 s) on an unreachable host, and the operator behind it was answered 503 in the very
   * incident the grace keeps the dashboard open for.
   */
  const withinGrace = (key: string, found: Promise<OperatorKey | undefined>): Promise<OperatorKey | undefined> =>
    found.catch((err: unknown) => {
      const kept = err instanceof OperatorKeysBusy && unreachableSince !== undefined ? withinGraceOf(key) : undefined;
      if (kept !== undefined) return kept;
      throw err;
    });
  const lookup = (key: string): Promise<OperatorKey | undefined> => {
    if (!OPERATOR_KEY_FORMAT.test(key)) return Promise.resolve(undefined);
    let hit = lookups.get(key);
    if (hit === undefined || hit.until <= now()) {
      if (lookups.size >= MAX_SESSIONS) lookups.clear();
      hit = { until: now() + ttlMs, found: withinGrace(key, oneAtATime(confirmed.has(key), () => ask(key))) };
      lookups.set(key, hit);
      hit.found.catch(() => lookups.delete(key));
    }
    return hit.found;
  };
  const sweep = (): void => {
    for (const [token, s] of sessions) if (s.expiresAt <= now()) sessions.delete(token);
  };
  return {
    /**
     * The operator behind this request, or undefined (no credential, unknown or revoked key, expired
     * session). Throws OperatorKeysUnreachable when the database cannot say and the key has no
     * confirmation within the grace, OperatorKeysBusy when too many keys are being checked.
     */
    async authenticate(req: IncomingMessage): Promise<Operator | undefined> {
      const bearer = bearerOf(req);
      if (bearer !== undefined) {
        const found = await lookup(bearer);
        return found === undefined ? undefined : { ...found, via: 'bearer' };
      }
      const token = cookieOf(req, SESSION_COOKIE);
      const session = token === undefined ? undefined : sessions.get(token);
      if (token === undefined || session === undefined) return undefined;
      if (session.expiresAt <= now()) {
        sessions.delete(token);
        return undefined;
      }
      const found = await lookup(session.key);
      if (found === undefined) sessions.delete(token);
      return found === undefined ? undefined : { ...found, via: 'session' };
    },
    /** Open a session for a valid operator key: the Set-Cookie value, or undefined for a bad key (throws as authenticate). */
    async login(key: string, secure: boolean): Promise<{ operator: OperatorKey; cookie: string } | undefined> {
      const operator = await lookup(key);
      if (operator === undefined) return undefined;
      if (sessions.size >= MAX_SESSIONS) sweep();
      const token = randomBytes(32).toString('base64url');
      sessions.set(token, { key, expiresAt: now() + SESSION_MAX_AGE_S * 1000 });
      const cookie = `${SESSION_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_MAX_AGE_S}${secure ? '; Secure' : ''}`;
      return { operator, cookie };
    },
    /** End the request's session (if any); the Set-Cookie value that clears it. */
    logout(req: IncomingMessage): string {
      const token = cookieOf(req, SESSION_COOKIE);
      if (token !== undefined) sessions.delete(token);
      return `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`;
    },
  };
}

export type OperatorGate = ReturnType<typeof createOperatorGate>;
