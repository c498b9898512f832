import { QueryTimeoutError } from './query-timeout.ts';

/** Socket errors that mean the server is not (or no longer) reachable. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * SQLSTATEs of a server that is going away or not accepting sessions yet (a restart, a failover),
 * and 57014, a statement the server cancelled: past its statement_timeout (serverStatementTimeoutOf,
 * a server too slow to answer in time) or by an operator's pg_cancel_backend; tried again, not parked.
 */
const GOING_AWAY = new Set(['57P01', '57P02', '57P03', '57014']);
/**
 * A server out of a resource for the moment: 53300 no connection slot left ("sorry, too many
 * clients already"), 53100 disk full, 53200 out of memory, 53000 others (shared memory segments). Read as a fault of the statement, a
 * pusher that could not open a connection to read an app's credentials parked that app's pushes as
 * permanently failed and counted them towards a ban of the app. Not 53400 (a configured limit, such
 * as temp_file_limit, that this statement will pass no better next time): retried, then parked.
 */
const OUT_OF_RESOURCES = /^53[0123]00$/;
// 'timeout expired': pg's own start-up deadline (DatabaseOptions.connectTimeoutMs) passed.
const LOST = /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|^timeout expired$/i;

/**
 * True for errors that say the database is unavailable (down, restarting, connection lost), not
 * that this statement or its data is wrong: the work should wait for the database, not spend
 * its retry attempts. Looks through `cause` too.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (const { e, code } of causes(err)) {
    if (e instanceof QueryTimeoutError) return true;
    if (code !== undefined && (UNREACHABLE.has(code) || GOING_AWAY.has(code) || code.startsWith('08') || OUT_OF_RESOURCES.test(code))) return true;
    if (LOST.test(e.message)) return true;
  }
  return false;
}

/**
 * A consumer's deferOn (@herald/messaging): a batch whose handler found the database unavailable
 * is deferred, code `database-unavailable` (as the registrar's and invalidators' messages are),
 * so an outage of any length parks nothing.
 */
export function deferWhileDatabaseUnavailable(err: unknown): { code: string; reason: string } | undefined {
  return isDatabaseUnavailable(err) ? { code: 'database-unavailable', reason: `database unavailable: ${err instanceof Error ? err.message : String(err)}` } : undefined;
}

/**
 * SQLSTATEs of a value the database will not take, whatever the moment: a data exception (class
 * 22: a character it cannot store, a number, date or offset out of range, text that is not of its
 * type), a null, foreign-key or check violation, a value too large for its index (54000). Not a
 * unique violation (a concurrent writer's race) nor an error in the statement itself (42…).
 */
const REFUSED_VALUE = /^(22[0-9A-Z]{3}|23502|23503|23514|54000)$/;

/**
 * Why the database refused a value a statement carried, or undefined when the error says
 * something else (unavailable, a race, a wrong statement). Such an error may belong to one message
 * of a batch (ConsumeOptions.messageError): e.g. a job whose text PostgreSQL cannot store fails the
 * demuxer's statement for its whole batch. Looks through `cause` too.
 */
export function refusedValueReason(err: unknown): string | undefined {
  for (const { e, code } of causes(err)) {
    if (code !== undefined && REFUSED_VALUE.test(code)) return `the database refused a value (SQLSTATE ${code}): ${e.message}`;
  }
  return undefined;
}

/** The error and its causes (at most five deep), each with its string `code` if it has one. */
function* causes(err: unknown): Generator<{ e: Error; code: string | undefined }> {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    yield { e, code: typeof code === 'string' ? code : undefined };
  }
}
