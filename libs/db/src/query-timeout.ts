import type pg from 'pg';

/**
 * A statement that went unanswered past its deadline. Its connection has been closed, so the pool
 * makes a new one for the next statement; isDatabaseUnavailable counts it as the database being
 * away (consumers defer, they do not park).
 */
export class QueryTimeoutError extends Error {
  override readonly name = 'QueryTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`PostgreSQL did not answer a statement within ${timeoutMs} ms; its connection was closed (a host lost or hung)`);
  }
}

/** A query config (pool.query / client.query) that sets its own deadline, over the Database's queryTimeoutMs. */
export interface TimedQueryConfig extends pg.QueryConfig {
  timeoutMs?: number;
}

type QueryFn = (this: pg.Client, ...args: unknown[]) => unknown;

/**
 * The client class whose every statement is abandoned after `defaultMs` (or its config's
 * `timeoutMs`) without an answer: the connection is destroyed, which fails the statement at once,
 * and `onTimeout` is told (the pool then closes its idle connections: made to the same host, they
 * would each hold the next statement as long again). Without it a statement sent to a host that
 * vanished without a word (a primary lost to a power cut or a network partition, not shut down)
 * waits until the kernel gives up retransmitting, about 15 minutes, and so does everything queued
 * behind it; a pusher's ledger claims lapse meanwhile. PostgreSQL's own statement_timeout cannot
 * help there: the server is gone. The bound runs from the statement's sending, not from a wait for
 * a busy pool's connection. A live server that is only slow cancels the statement itself a little
 * before (the pool's statement_timeout, serverStatementTimeoutOf, set by the longest bound of the
 * pool's statements); one whose client bound is shorter than that (the ledger's by default, the
 * pool's where the ledger's is longer) finishes an abandoned statement, an insert still committing:
 * every statement bounded so must be safe to try again.
 *
 * Not bounded: a submittable (a cursor streaming rows, which lasts as long as its reader), a
 * statement given its callback in its config, and any statement when neither deadline is set.
 */
export function withQueryTimeout(Base: typeof pg.Client, defaultMs: number | undefined, onTimeout: () => void = () => undefined): typeof pg.Client {
  const base = Base.prototype.query as unknown as QueryFn;
  class TimedClient extends Base {}
  (TimedClient.prototype as unknown as { query: QueryFn }).query = function timedQuery(...args) {
    const first = args[0];
    const config = typeof first === 'object' && first !== null ? (first as Partial<TimedQueryConfig> & { submit?: unknown; callback?: unknown }) : undefined;
    const timeoutMs = config?.timeoutMs ?? defaultMs;
    const last = args.at(-1);
    if (timeoutMs === undefined || timeoutMs <= 0 || typeof config?.submit === 'function' || typeof config?.callback === 'function') return base.apply(this, args);
    const timer = setTimeout(() => {
      this.connection.stream.destroy(new QueryTimeoutError(timeoutMs));
      onTimeout();
    }, timeoutMs);
    try {
      if (typeof last === 'function') {
        const callback = last as (...r: unknown[]) => void;
        return base.apply(this, [
          ...args.slice(0, -1),
          (...result: unknown[]) => {
            clearTimeout(timer);
            callback(...result);
          },
        ]);
      }
      return (base.apply(this, args) as Promise<unknown>).finally(() => clearTimeout(timer));
    } catch (err) {
      // Refused before it was sent (pg throws for a bad argument): nothing to wait for.
      clearTimeout(timer);
      throw err;
    }
  };
  return TimedClient;
}
