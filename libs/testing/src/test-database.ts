import { randomBytes } from 'node:crypto';
import { createDatabase, dropSchemaAndClose, type Database } from '@herald/db';

/** The PostgreSQL database the tests use; override with HERALD_TEST_DATABASE_URL. */
export const TEST_DATABASE_URL = process.env['HERALD_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase {
  readonly url: string;
  readonly schema: string;
  readonly db: Database;
  /** Close the pool and drop the schema with everything in it. */
  drop(): Promise<void>;
}

/** A fresh, migrated schema per test (file), so tests never see each other's rows. */
export async function createTestDatabase(prefix = 'test'): Promise<TestDatabase> {
  const safePrefix = prefix
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 40);
  const schema = `herald_${safePrefix}_${randomBytes(4).toString('hex')}`;
  const db = createDatabase({ url: TEST_DATABASE_URL, schema, poolSize: 5 });
  try {
    await db.migrate();
  } catch (err) {
    await dropSchemaAndClose(db);
    throw err;
  }
  return { url: TEST_DATABASE_URL, schema, db, drop: () => dropSchemaAndClose(db) };
}
