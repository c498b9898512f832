import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from './database.ts';
import { isDatabaseUnavailable, refusedValueReason } from './database-errors.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('dberr');
  await sql`create table refusals (n int not null check (n > 0), label text unique, note text)`.execute(t.db.kysely);
  await sql`create index refusals_note on refusals (note)`.execute(t.db.kysely);
});
afterAll(() => t.drop());

/** The error PostgreSQL gives for a statement (it must fail). */
async function errorOf(statement: ReturnType<typeof sql>): Promise<unknown> {
  try {
    await statement.execute(t.db.kysely);
  } catch (err) {
    return err;
  }
  throw new Error('the statement did not fail');
}

describe('refusedValueReason, against PostgreSQL', () => {
  it('names a value the database will not take, whenever it is tried', async () => {
    const refused = [
      await errorOf(sql`select ${'a\u0000b'}::text`), // 22021: a NUL in text
      await errorOf(sql`select ${'2026-11-29T09:00:00+16:00'}::timestamptz`), // 22009: an offset beyond ±15:59
      await errorOf(sql`select ${'{"a":"\\u0000"}'}::jsonb`), // 22P05: a NUL in jsonb
      await errorOf(sql`insert into refusals (n) values (null)`), // 23502
      await errorOf(sql`insert into refusals (n) values (-1)`), // 23514
      // 54000: a value larger than a btree index entry can hold (random, so compression cannot shrink it).
      await errorOf(sql`insert into refusals (n, note) values (1, ${randomBytes(12_000).toString('base64')})`),
    ];
    const reasons = refused.map(refusedValueReason);
    expect(reasons.map((r) => r?.match(/SQLSTATE (\w+)/)?.[1])).toEqual(['22021', '22009', '22P05', '23502', '23514', '54000']);
    expect(reasons[0]).toMatch(/^the database refused a value \(SQLSTATE 22021\): invalid byte sequence/);
    // Wrapped, as a repository rethrows it.
    expect(refusedValueReason(new Error('targeting failed', { cause: refused[0] }))).toBe(reasons[0]);
  });

  it('leaves alone a race, a wrong statement and a database that is not there', async () => {
    await sql`insert into refusals (n, label) values (1, 'taken')`.execute(t.db.kysely);
    const race = await errorOf(sql`insert into refusals (n, label) values (2, 'taken')`); // 23505
    const wrong = await errorOf(sql`select no_such_column from refusals`); // 42703
    const down = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/test', schema: 'public', poolSize: 1 });
    let unreachable: unknown;
    try {
      await sql`select 1`.execute(down.kysely);
    } catch (err) {
      unreachable = err;
    } finally {
      await down.close();
    }
    expect(isDatabaseUnavailable(unreachable)).toBe(true);
    expect([race, wrong, unreachable].map(refusedValueReason)).toEqual([undefined, undefined, undefined]);
  });

  it('counts a server out of connection slots (53300) as unavailable, not as a fault of the statement', async () => {
    const role = `herald_full_${randomBytes(4).toString('hex')}`;
    await sql`create role ${sql.id(role)} login connection limit 0`.execute(t.db.kysely);
    const full = createDatabase({ url: t.url.replace('postgres@', `${role}@`), schema: 'public', poolSize: 1 });
    try {
      let refused: unknown;
      try {
        await sql`select 1`.execute(full.kysely);
      } catch (e) {
        refused = e;
      }
      expect((refused as { code?: string }).code).toBe('53300');
      expect(isDatabaseUnavailable(refused)).toBe(true);
      expect(refusedValueReason(refused)).toBeUndefined();
      // A configured limit this statement will pass no better next time (53400) is the statement's.
      const overLimit = await t.db.kysely.connection().execute(async (conn) => {
        await sql`begin`.execute(conn);
        await sql`set local temp_file_limit = '64kB'`.execute(conn);
        await sql`set local work_mem = '64kB'`.execute(conn);
        try {
          await sql`select g from generate_series(1, 200000) g order by md5(g::text)`.execute(conn);
        } catch (e) {
          return e;
        } finally {
          await sql`rollback`.execute(conn);
        }
        return undefined;
      });
      expect((overLimit as { code?: string }).code).toBe('53400');
      expect(isDatabaseUnavailable(overLimit)).toBe(false);
    } finally {
      await full.close();
      await sql`drop role ${sql.id(role)}`.execute(t.db.kysely);
    }
  });
});

