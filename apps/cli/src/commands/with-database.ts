import { createDatabase, type Database } from '@herald/db';
import { createLogger } from '@herald/logging';
import { readCliConfig } from '../cli-config.ts';

/** Run `fn` with a database from the CLI's settings, closed afterwards. */
export async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const config = readCliConfig();
  const logger = createLogger({ service: 'herald-cli', level: 'warn', format: 'json' });
  const db = createDatabase({ url: config.DATABASE_URL, schema: config.DATABASE_SCHEMA, logger });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}
