import { createHash } from 'node:crypto';
import type { Kysely, RawBuilder } from 'kysely';
import type pg from 'pg';
import type { HeraldTables } from './tables.ts';
import type { TimedQueryConfig } from './query-timeout.ts';

/**
 * Runs a Kysely-built query as a named (prepared) statement on `pool` (the pool under `db`, same
 * connections and search_path): PostgreSQL parses and plans it once per connection instead of at
 * every call. Only for a query whose text does not depend on its input (lists travel as array
 * parameters), or each shape would be one more statement kept by every connection. The name is
 * derived from the text, so two texts can never claim one name. PostgreSQL may keep a generic
 * plan until the tables' statistics change: a statement that joins a table that was empty when
 * first run can keep scanning it as it grows, until the next ANALYZE (delivery-ledger.ts).
 * `timeoutMs`: this statement's deadline over the pool's own (query-timeout.ts).
 */
export async function queryPrepared<R>(db: Kysely<HeraldTables>, pool: pg.Pool | undefined, query: RawBuilder<R>, timeoutMs?: number): Promise<R[]> {
  // Without a pool (a repository built on Kysely alone), as Kysely runs it.
  if (pool === undefined) return (await query.execute(db)).rows;
  const compiled = query.compile(db);
  const config: TimedQueryConfig = { name: nameOf(compiled.sql), text: compiled.sql, values: compiled.parameters as unknown[], ...(timeoutMs !== undefined && { timeoutMs }) };
  const { rows } = await pool.query(config);
  return rows as R[];
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
