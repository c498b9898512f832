import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';

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
      const { error, results = [] } = await migrator.migrateToLatest();
      if (error !== undefined) {
        const failed = results.find((r) => r.status === 'Error')?.migrationName ?? '(before any migration)';
        throw new MigrationError(`migration ${failed} failed in schema ${schema}: ${String(error)}`, { cause: error });
      }
      return results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
    } finally {
      await sql`select pg_advisory_unlock(${lockKey})`.execute(conn);
    }
  });
}
