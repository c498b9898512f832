import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { startTcpProxyFor, type TcpProxy } from '@herald/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from './database.ts';
import { deferWhileDatabaseUnavailable, isDatabaseUnavailable } from './database-errors.ts';
import { QueryTimeoutError } from './query-timeout.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

const failureOf = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (e: unknown) => e);

/**
 * A primary lost without a word (a power cut, a partition): the statements already sent to it get
 * no answer, not an error, while new connections reach the host that took over.
 */
describe('a statement whose host went silent', () => {
  let t: SpecDatabase;
  let proxy: TcpProxy;
  let db: Database | undefined;
  beforeAll(async () => {
    t = await createSpecDatabase('query_timeout');
    proxy = await startTcpProxyFor(t.url);
  });
  afterEach(async () => {
    await db?.close();
    db = undefined;
  });
  afterAll(async () => {
    await proxy?.close();
    await t?.drop();
  });

  it('fails after queryTimeoutMs as the database being unavailable, and the next statement runs on a new connection', async () => {
    db = createDatabase({ url: proxy.urlFor(t.url), schema: t.schema, poolSize: 1, queryTimeoutMs: 1_000 });
    await sql`select 1`.execute(db.kysely);
    proxy.stall();
    const started = Date.now();
    const err = await failureOf(sql`select 1`.execute(db.kysely));
    const tookMs = Date.now() - started;
    expect(err).toBeInstanceOf(QueryTimeoutError);
    expect(tookMs).toBeGreaterThanOrEqual(950);
    expect(tookMs).toBeLessThan(5_000);
    expect(isDatabaseUnavailable(err)).toBe(true);
    expect(deferWhileDatabaseUnavailable(err)?.reason).toMatch(/did not answer a statement within 1000 ms/);
    // One connection in the pool: had the silent one been kept, this would wait behind it and fail too.
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db.kysely);
    expect(rows[0]?.one).toBe(1);
  });

  it('on a server alive but too slow, the server cancels the statement itself just before the client would: rolled back, deferred, on a connection kept', async () => {
    await sql`create table if not exists slow_t (id int)`.execute(t.db.kysely);
    db = createDatabase({ url: t.url, schema: t.schema, poolSize: 1, queryTimeoutMs: 1_000 });
    const { rows: before } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db.kysely);
    const started = Date.now();
    const err = await failureOf(sql`insert into slow_t select 1 from pg_sleep(2)`.execute(db.kysely));
    expect(Date.now() - started).toBeLessThan(1_000);
    expect((err as { code?: string }).code).toBe('57014');
    expect(isDatabaseUnavailable(err)).toBe(true);
    // The client abandoning it alone left the insert running: it committed a second later.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from slow_t`.execute(t.db.kysely);
    expect(rows[0]?.n).toBe(0);
    const { rows: after } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db.kysely);
    expect(after[0]?.pid).toBe(before[0]?.pid);
  });

  it("gives the server the longest bound of the pool's statements: the ledger's, where it is longer than the pool's", async () => {
    db = createDatabase({ url: t.url, schema: t.schema, poolSize: 1, queryTimeoutMs: 1_000, ledgerTimeoutMs: 3_000 });
    const { rows } = await sql<{ bound: string }>`select current_setting('statement_timeout') as bound`.execute(db.kysely);
    expect(rows[0]?.bound).toBe('2700ms');
  });

  it('does not cut a statement answered within it', async () => {
    db = createDatabase({ url: t.url, schema: t.schema, poolSize: 1, queryTimeoutMs: 2_000 });
    const { rows } = await sql<{ one: number }>`select 1 as one from pg_sleep(0.2)`.execute(db.kysely);
    expect(rows[0]?.one).toBe(1);
  });

  it('leaves migrate() unbounded (an index built on a large table may rightly take long) and bounds the service’s statements', async () => {
    const schema = `${t.schema}_m`;
    db = createDatabase({ url: t.url, schema, poolSize: 1, queryTimeoutMs: 20 });
    try {
      // A new schema's migrations take far longer than 20 ms (about 200 ms here, in one transaction).
      await db.migrate();
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.id(schema, 'delivery_ledger')}`.execute(t.db.kysely);
      expect(rows[0]?.n).toBe(0);
      // Cut by the server's own bound, a little under the client's (serverStatementTimeoutOf).
      expect(isDatabaseUnavailable(await failureOf(sql`select pg_sleep(0.5)`.execute(db.kysely)))).toBe(true);
    } finally {
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(t.db.kysely);
    }
  });

  it('bounds the ledger’s statements by ledgerTimeoutMs, far below the pool’s: a renewal and a mark sent to a lost primary are tried again, on a new connection, before the claims lapse', async () => {
    db = createDatabase({ url: proxy.urlFor(t.url), schema: t.schema, poolSize: 4, queryTimeoutMs: 60_000, ledgerTimeoutMs: 1_500 });
    const { kysely } = db;
    const pushIds = [randomUUID(), randomUUID()];
    const claims = await db.ledger.claim(pushIds, 'pusher-a', 30_000);
    expect([...claims.values()]).toEqual(['claimed', 'claimed']);
    // Three connections open (and idle) when the host goes silent.
    await Promise.all([1, 2, 3].map(() => sql`select pg_sleep(0.1)`.execute(kysely)));

    proxy.stall();
    const started = Date.now();
    expect(await failureOf(db.ledger.renew(pushIds, 'pusher-a'))).toBeInstanceOf(QueryTimeoutError);
    expect(Date.now() - started).toBeLessThan(5_000);
    // The next goes to a new connection at once, not to another of the silent ones (each would hold it 1.5 s).
    expect(await db.ledger.renew(pushIds, 'pusher-a')).toBe(2);

    await Promise.all([1, 2, 3].map(() => sql`select pg_sleep(0.1)`.execute(kysely)));
    proxy.stall();
    const entries = pushIds.map((pushId) => ({ pushId, outcome: 'delivered' as const }));
    expect(await failureOf(db.ledger.complete(entries))).toBeInstanceOf(QueryTimeoutError);
    // The silent host never got the mark; the second attempt records it.
    expect(await t.db.ledger.doneOf(pushIds)).toEqual(new Set());
    await db.ledger.complete(entries);
    expect(await t.db.ledger.doneOf(pushIds)).toEqual(new Set(pushIds));
  });
});
