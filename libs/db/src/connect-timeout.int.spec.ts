import { sql } from 'kysely';
import { startTcpProxyFor, type TcpProxy } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from './database.ts';
import { deferWhileDatabaseUnavailable, isDatabaseUnavailable } from './database-errors.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

/** A PostgreSQL that takes connections and answers nothing: a failover caught half-way, a hung host. */
describe('a database that accepts connections but does not answer', () => {
  let t: SpecDatabase;
  let proxy: TcpProxy;
  beforeAll(async () => {
    t = await createSpecDatabase('connect_timeout');
    proxy = await startTcpProxyFor(t.url);
  });
  afterAll(async () => {
    proxy?.thaw();
    await proxy?.close();
    await t?.drop();
  });

  it('fails a query after connectTimeoutMs as unavailable (so consumers defer, not park), and serves again once it answers', async () => {
    const db = createDatabase({ url: proxy.urlFor(t.url), schema: t.schema, poolSize: 1, connectTimeoutMs: 500 });
    try {
      proxy.freeze();
      const started = Date.now();
      const err = await sql`select 1`.execute(db.kysely).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(isDatabaseUnavailable(err)).toBe(true);
      expect(deferWhileDatabaseUnavailable(err)?.code).toBe('database-unavailable');
      proxy.thaw();
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db.kysely);
      expect(rows[0]?.one).toBe(1);
    } finally {
      await db.close();
    }
  });

  it('a query waiting for a busy pool longer than connectTimeoutMs waits: a healthy pool under load is no database outage', async () => {
    const db = createDatabase({ url: t.url, schema: t.schema, poolSize: 1, connectTimeoutMs: 200 });
    try {
      const busy = sql`select pg_sleep(0.8)`.execute(db.kysely);
      // Behind the one connection for 800 ms: pg-pool's own connectionTimeoutMillis failed it at 200 ms.
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db.kysely);
      expect(rows[0]?.one).toBe(1);
      await busy;
    } finally {
      await db.close();
    }
  });
});
