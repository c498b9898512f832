/** Socket errors that mean the server is not (or no longer) reachable. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** SQLSTATEs of a server that is going away or not accepting sessions yet (a restart, a failover). */
const GOING_AWAY = new Set(['57P01', '57P02', '57P03']);
const LOST = /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect/i;

/**
 * True for errors that say the database is unavailable (down, restarting, connection lost), not
 * that this statement or its data is wrong: the work should wait for the database, not spend
 * its retry attempts. Looks through `cause` too.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNREACHABLE.has(code) || GOING_AWAY.has(code) || code.startsWith('08'))) return true;
    if (LOST.test(e.message)) return true;
  }
  return false;
}
