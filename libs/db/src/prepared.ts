import { createHash } from 'node:crypto';
import type { Kysely, RawBuilder } from 'kysely';
import type pg from 'pg';
import type { HeraldTables } from './tables.ts';

/**
 * Runs a Kysely-built query as a named (prepared) statement on `pool` (the pool under `db`, same
 * connections and search_path): PostgreSQL parses and plans it once per connection instead of at
 * every call. Only for a query whose text does not depend on its input (lists travel as array
 * parameters), or each shape would be one more statement kept by every connection. The name is
 * derived from the text, so two texts can never claim one name.
 */
export async function queryPrepared<R>(db: Kysely<HeraldTables>, pool: pg.Pool, query: RawBuilder<R>): Promise<R[]> {
  return (await executePrepared(db, pool, query)).rows;
}

/** What a statement returned: its rows and how many rows it changed. */
export interface Executed<R> {
  rows: R[];
  affected: number;
}

/**
 * `query` as a prepared statement on `pool` (see queryPrepared) or, without a pool (a caller that
 * built the repository on Kysely alone), as Kysely runs it.
 */
export async function executePrepared<R>(db: Kysely<HeraldTables>, pool: pg.Pool | undefined, query: RawBuilder<R>): Promise<Executed<R>> {
  if (pool === undefined) {
    const { rows, numAffectedRows } = await query.execute(db);
    return { rows, affected: Number(numAffectedRows ?? 0n) };
  }
  const compiled = query.compile(db);
  const result = await pool.query({ name: nameOf(compiled.sql), text: compiled.sql, values: compiled.parameters as unknown[] });
  return { rows: result.rows as R[], affected: result.rowCount ?? 0 };
}

/** Statement names by text, hashed once per text (the texts are fixed, so this holds a handful). */
const names = new Map<string, string>();

function nameOf(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `herald_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    names.set(text, name);
  }
  return name;
}
