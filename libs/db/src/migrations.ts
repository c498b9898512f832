import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import {
  Migrator,
  PostgresDialect,
  sql,
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type Kysely,
  type Migration,
  type MigrationProvider,
  type MigrationResultSet,
  type PostgresDialectConfig,
  type SchemaMetadata,
  type TableMetadata,
} from 'kysely';

/** infra/db/migrations, resolved from this file so it works from any working directory. */
export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('../../../infra/db/migrations/', import.meta.url));

const MIGRATION_FILE = /^\d{4}_[a-z0-9_]+\.sql$/;

/** Thrown when migrating fails; names the migration that failed. */
export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/**
 * Reads forward-only plain SQL migrations (`NNNN_name.sql`) from a folder. Each file runs as one
 * multi-statement query inside the Migrator's transaction; unqualified names land in the
 * connection's search_path, i.e. the Database's schema.
 */
export class SqlFileMigrationProvider implements MigrationProvider {
  constructor(private readonly dir: string) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.dir)).filter((f) => MIGRATION_FILE.test(f)).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const text = await readFile(join(this.dir, file), 'utf8');
      migrations[file.replace(/\.sql$/, '')] = {
        up: async (db) => {
          await sql.raw(text).execute(db);
        },
      };
    }
    return migrations;
  }
}

/**
 * Bring `schema` to the latest migration. Creates the schema if missing. Holds a per-schema
 * session advisory lock on one connection for the whole run, so any number of starters may
 * call this at once: the first migrates, the rest wait and then find nothing to do.
 * Upgrading a schema, each pending migration runs and commits in a transaction of its own: in
 * one, an upgrade over 0032 and 0033 held 0032's ACCESS EXCLUSIVE lock on jobs through 0033's
 * backfill of it (every job accept and status read waited), and one failure undid the rest.
 */
export async function migrateToLatest<DB>(db: Kysely<DB>, schema: string, dir = DEFAULT_MIGRATIONS_DIR): Promise<string[]> {
  return db.connection().execute(async (conn) => {
    const lockKey = sql`hashtext(${`herald.migrate.${schema}`})`;
    await sql`select pg_advisory_lock(${lockKey})`.execute(conn);
    try {
      await sql`create schema if not exists ${sql.id(schema)}`.execute(conn);
      const migrator = new Migrator({
        db: conn,
        provider: new SqlFileMigrationProvider(dir),
        migrationTableSchema: schema,
      });
      const known = await migrator.getMigrations();
      // A new schema has no rows and no traffic: everything in one transaction, which is much
      // cheaper than one Migrator run per migration (dozens of test schemas are made per run).
      if (known.every((m) => m.executedAt === undefined)) return applied(await migrator.migrateToLatest(), schema);
      const done: string[] = [];
      for (;;) {
        const step = applied(await migrator.migrateUp(), schema);
        if (step.length === 0) return done;
        done.push(...step);
      }
    } finally {
      await sql`select pg_advisory_unlock(${lockKey})`.execute(conn);
    }
  });
}

/** The migrations a Migrator run applied; a MigrationError naming the one that failed. */
function applied({ error, results = [] }: MigrationResultSet, schema: string): string[] {
  if (error !== undefined) {
    const failed = results.find((r) => r.status === 'Error')?.migrationName ?? '(before any migration)';
    throw new MigrationError(`migration ${failed} failed in schema ${schema}: ${String(error)}`, { cause: error });
  }
  return results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Kysely's PostgreSQL dialect whose introspector reads one schema only. Kysely's own reads the
 * columns of every table in every schema, calling functions that look a schema and a table up by
 * name; a schema another client dropped meanwhile fails that read ("schema … does not exist"), and
 * the Migrator, which introspects to learn whether its own tables exist, fails with it (seen with
 * test files side by side, each dropping its schema when done).
 */
export class SchemaPostgresDialect extends PostgresDialect {
  constructor(
    config: PostgresDialectConfig,
    private readonly schema: string,
  ) {
    super(config);
  }

  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SchemaIntrospector(db, this.schema);
  }
}

/** Tables and views of one schema, with their columns, read by the schema's and tables' oids. */
class SchemaIntrospector implements DatabaseIntrospector {
  constructor(
    private readonly db: Kysely<unknown>,
    private readonly schema: string,
  ) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace`.execute(this.db);
    return rows;
  }

  async getTables(options = { withInternalKyselyTables: false }): Promise<TableMetadata[]> {
    const { rows } = await sql<ColumnRow>`
      select c.relname as table, c.relkind as kind, a.attname as column, t.typname as type, tn.nspname as type_schema,
             a.attnotnull as not_null, a.atthasdef as has_default,
             (a.attidentity <> '' or coalesce(pg_catalog.pg_get_expr(d.adbin, d.adrelid) like 'nextval(%', false)) as auto_incrementing
      from pg_catalog.pg_class c
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      join pg_catalog.pg_type t on t.oid = a.atttypid
      join pg_catalog.pg_namespace tn on tn.oid = t.typnamespace
      left join pg_catalog.pg_attrdef d on d.adrelid = c.oid and d.adnum = a.attnum
      where n.nspname = ${this.schema} and c.relkind in ('r', 'v', 'p')
      order by c.relname, a.attnum`.execute(this.db);
    const tables = new Map<string, TableMetadata & { columns: TableMetadata['columns'][number][] }>();
    for (const r of rows) {
      if (!options.withInternalKyselyTables && r.table.startsWith('kysely_migration')) continue;
      let table = tables.get(r.table);
      if (table === undefined) {
        table = { name: r.table, schema: this.schema, isView: r.kind === 'v', columns: [] };
        tables.set(r.table, table);
      }
      table.columns.push({
        name: r.column,
        dataType: r.type,
        dataTypeSchema: r.type_schema,
        isNullable: !r.not_null,
        hasDefaultValue: r.has_default,
        isAutoIncrementing: r.auto_incrementing,
      });
    }
    return [...tables.values()];
  }

  async getMetadata(options?: { withInternalKyselyTables: boolean }): Promise<DatabaseMetadata> {
    return { tables: await this.getTables(options) };
  }
}

interface ColumnRow {
  table: string;
  kind: string;
  column: string;
  type: string;
  type_schema: string;
  not_null: boolean;
  has_default: boolean;
  auto_incrementing: boolean;
}
