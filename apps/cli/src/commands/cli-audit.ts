import { hostname, userInfo } from 'node:os';
import { audited, type AuditActor, type AuditRequest, type Database } from '@herald/db';
import { cliLogger, withDatabase } from './with-database.ts';

/**
 * The CLI acts with RabbitMQ's and PostgreSQL's own credentials, so it names the person by the
 * account that ran it: user@host.
 */
export function cliActor(): AuditActor {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (a container's arbitrary uid): keep "unknown"
  }
  return { kind: 'cli', id: `${user}@${hostname()}`, name: user };
}

/**
 * Run a CLI write action under the audit log (recorded before it runs: no database, no action).
 * `work` gets the database the entry was written with.
 */
export async function auditedCli<T>(
  what: AuditRequest,
  work: (db: Database) => Promise<T>,
  summary: (result: T) => unknown = (r) => r,
): Promise<T> {
  const logger = cliLogger();
  return withDatabase(async (db) => {
    let out: T | undefined;
    // The refusal or error is said by main, in words, on stderr: only an outcome the audit log
    // could not record is logged (JSON, on stderr).
    await audited(
      db.audit,
      logger,
      cliActor(),
      what,
      async () => {
        out = await work(db);
        return summary(out);
      },
      { logOutcomes: false },
    );
    return out as T;
  });
}
