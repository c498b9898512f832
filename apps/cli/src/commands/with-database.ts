import { createDatabase, type Database } from '@herald/db';
import { createLogger, type Logger } from '@herald/logging';
import { readCliConfig } from '../cli-config.ts';

/** The CLI's own log lines (warnings and errors, JSON) go to stderr: stdout is the command's output, which scripts read. */
export const cliLogger = (): Logger => createLogger({ service: 'herald-cli', level: 'warn', format: 'json', destination: 'stderr' });

/** Run `fn` with a database from the CLI's settings, closed afterwards. */
export async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const config = readCliConfig();
  // No logger: a command says in words what failed it; the database's own lines (a JSON "query
  // failed" with its stack) would say it again, in the middle of the command's output.
  const db = createDatabase({ url: config.DATABASE_URL, schema: config.DATABASE_SCHEMA });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}
