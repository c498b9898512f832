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

/**
 * The newest migration this release's code needs: a service waits, not ready, until the schema
 * holds it (Database.untilMigrated). Every migration added raises it (migrations.int.spec.ts holds it
 * to the newest file), since the code that comes with a migration reads what it adds.
 */
export const REQUIRED_MIGRATION = '0047_job_demux_snapshot';

/**
 * Whether `schema` holds `migration`: false when it does not, or has no migrations table yet.
 * Throws what the database answers otherwise (unreachable, say).
 */
export async function hasMigration<DB>(db: Kysely<DB>, schema: string, migration = REQUIRED_MIGRATION): Promise<boolean> {
  return (await recordedMigrations(db, schema)).includes(migration);
}

/** The migrations recorded as applied in `schema`, in name order (none when it has no migrations table yet). */
async function recordedMigrations<DB>(db: Kysely<DB>, schema: string): Promise<string[]> {
  const { rows } = await sql<{ found: boolean }>`select to_regclass(format('%I.kysely_migration', ${schema}::text)) is not null as found`.execute(db);
  if (rows[0]?.found !== true) return [];
  const { rows: recorded } = await sql<{ name: string }>`select name from ${sql.table(`${schema}.kysely_migration`)} order by name`.execute(db);
  return recorded.map((r) => r.name);
}

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

/** How a migration waits for the locks it needs (DatabaseOptions.migrationLocks). */
export interface MigrationLockOptions {
  /**
   * Longest one statement of a migration waits for a lock (PostgreSQL's lock_timeout, default
   * 2,000 ms) before the migration is rolled back and tried again. While a migration waits for a
   * table's exclusive lock behind a long transaction (an operator's psql session, pg_dump), every
   * statement after it on that table waits too: without the bound, the pushers' claims waited out
   * the ledger's deadline and their claims lapsed.
   */
  lockTimeoutMs?: number;
  /** How long a migration is tried again before migrate() fails naming what holds the lock (default 600,000 ms). */
  lockWaitMs?: number;
  /** Told at each try given up: what holds locks in the schema (pid, application, how long, statement). */
  onLockWait?: (wait: { migration: string; holders: string[]; retryInMs: number }) => void;
  /** Told when the schema holds migrations this release does not know (it is ahead: a rollback), every one it knows applied. */
  onAhead?: (unknown: string[]) => void;
}

const DEFAULT_LOCK_TIMEOUT_MS = 2_000;
const DEFAULT_LOCK_WAIT_MS = 600_000;
/** PostgreSQL's SQLSTATE for a lock not taken within lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Bring `schema` to the latest migration. Creates the schema if missing. Holds a per-schema
 * session advisory lock on one connection for the whole run, so any number of starters may
 * call this at once: the first migrates, the rest wait and then find nothing to do.
 * Upgrading a schema, each pending migration runs and commits in a transaction of its own: in
 * one, an upgrade over 0032 and 0033 held 0032's ACCESS EXCLUSIVE lock on jobs through 0033's
 * backfill of it (every job accept and status read waited), and one failure undid the rest.
 * A migration that cannot take a lock within `lockTimeoutMs` is rolled back and tried again
 * (MigrationLockOptions). A schema ahead of this release (a rollback: migrations it does not know,
 * every one it knows applied) is left as it is, told to `onAhead`.
 */
export async function migrateToLatest<DB>(db: Kysely<DB>, schema: string, dir = DEFAULT_MIGRATIONS_DIR, locks: MigrationLockOptions = {}): Promise<string[]> {
  return db.connection().execute(async (conn) => {
    const lockKey = sql`hashtext(${`herald.migrate.${schema}`})`;
    await sql`select pg_advisory_lock(${lockKey})`.execute(conn);
    try {
      await sql`create schema if not exists ${sql.id(schema)}`.execute(conn);
      await sql.raw(`set lock_timeout = ${Math.max(1, Math.round(locks.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS))}`).execute(conn);
      const provider = new SqlFileMigrationProvider(dir);
      const inRelease = new Set(Object.keys(await provider.getMigrations()));
      const unknown = (await recordedMigrations(conn, schema)).filter((name) => !inRelease.has(name));
      const migrator = new Migrator({ db: conn, provider, migrationTableSchema: schema });
      const known = await migrator.getMigrations();
      if (unknown.length > 0) {
        const pending = known.filter((m) => m.executedAt === undefined).map((m) => m.name);
        if (pending.length > 0) {
          throw new MigrationError(`schema ${schema} holds migrations this release does not know (${unknown.join(', ')}) and lacks ones it needs (${pending.join(', ')}): run the release that made it, or restore the schema`);
        }
        locks.onAhead?.(unknown);
        return [];
      }
      // A new schema has no rows and no traffic: everything in one transaction, which is much
      // cheaper than one Migrator run per migration (dozens of test schemas are made per run).
      if (known.every((m) => m.executedAt === undefined)) return applied(await migrator.migrateToLatest(), schema);
      const done: string[] = [];
      // The wait is each migration's own: time spent running those before it (an index build) is none of it.
      const lockWaitMs = locks.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
      let giveUpAt = Date.now() + lockWaitMs;
      for (let wait = 500; ; ) {
        const result = await migrator.migrateUp();
        const failed = result.results?.find((r) => r.status === 'Error')?.migrationName;
        if (failed !== undefined && sqlStateOf(result.error) === LOCK_NOT_AVAILABLE) {
          const holders = await lockHolders(conn, schema);
          if (Date.now() + wait > giveUpAt) {
            throw new MigrationError(
              `migration ${failed} in schema ${schema} could not take its locks within ${lockWaitMs} ms; ${holders.length === 0 ? 'no transaction holds a lock in the schema now' : `held by ${holders.join('; ')}`}`,
              { cause: result.error },
            );
          }
          locks.onLockWait?.({ migration: failed, holders, retryInMs: wait });
          await new Promise((resolve) => setTimeout(resolve, wait));
          wait = Math.min(wait * 2, 15_000);
          continue;
        }
        const step = applied(result, schema);
        if (step.length === 0) return done;
        done.push(...step);
        giveUpAt = Date.now() + lockWaitMs;
        wait = 500;
      }
    } finally {
      // On a connection lost meanwhile these fail too: the error that ended the run is the one to see.
      await sql`reset lock_timeout`.execute(conn).catch(() => undefined);
      await sql`select pg_advisory_unlock(${lockKey})`.execute(conn).catch(() => undefined);
    }
  });
}

const sqlStateOf = (err: unknown): string | undefined => {
  for (let e = err; e instanceof Error; e = e.cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
};

/**
 * The other sessions holding locks on the schema's tables, oldest transaction first, as an operator
 * would look them up. PostgreSQL shows another role's state, transaction start and statement only
 * to a superuser or a member of pg_read_all_stats: for the rest, the pid and role.
 */
async function lockHolders<DB>(conn: Kysely<DB>, schema: string): Promise<string[]> {
  const { rows } = await sql<{ pid: number; usename: string | null; application_name: string | null; state: string | null; xact_s: number | null; tables: string; query: string | null }>`
    select a.pid, a.usename, a.application_name, a.state, extract(epoch from now() - a.xact_start)::int as xact_s,
           string_agg(distinct c.relname, ', ') as tables, left(a.query, 120) as query
    from pg_locks l
    join pg_class c on c.oid = l.relation
    join pg_namespace n on n.oid = c.relnamespace
    join pg_stat_activity a on a.pid = l.pid
    where n.nspname = ${schema} and c.relkind in ('r', 'p') and l.granted and l.pid <> pg_backend_pid()
    group by a.pid, a.usename, a.application_name, a.state, a.xact_start, a.query
    order by a.xact_start nulls last limit 5`.execute(conn);
  return rows.map((r) => {
    const who = [r.usename === null ? undefined : `role ${r.usename}`, r.application_name === null || r.application_name === '' ? undefined : r.application_name].filter((w) => w !== undefined).join(', ');
    const what =
      r.state === null
        ? `on ${r.tables}, its state hidden from this role (pg_read_all_stats shows it)`
        : `${r.state}, in a transaction for ${r.xact_s ?? '?'} s, on ${r.tables}: ${r.query ?? ''}`;
    return `pid ${r.pid} (${who === '' ? 'no application_name' : who}, ${what})`;
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
