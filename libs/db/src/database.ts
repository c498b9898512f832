import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Kysely, sql, type LogEvent } from 'kysely';
import type { Logger } from '@herald/logging';
import type { HeraldTables } from './tables.ts';
import { hasMigration, migrateToLatest, REQUIRED_MIGRATION, SchemaPostgresDialect, type MigrationLockOptions } from './migrations.ts';
import { isDatabaseUnavailable } from './database-errors.ts';
import { createDeviceRepository, type DeviceRepository } from './device-repository.ts';
import { createPreferenceRepository, type PreferenceRepository } from './preference-repository.ts';
import { createAppRepository, type AppRepository } from './app-repository.ts';
import { createDeliveryLedger, type DeliveryLedger } from './delivery-ledger.ts';
import { createScheduledPushRepository, type ScheduledPushRepository } from './scheduled-push-repository.ts';
import { createRateLimitRepository, type RateLimitRepository } from './rate-limit-repository.ts';
import { createJobRepository, type JobRepository } from './job-repository.ts';
import { createApiKeyRepository, type ApiKeyRepository } from './api-key-repository.ts';
import { createSubscriptionRepository, type SubscriptionRepository } from './subscription-repository.ts';
import { createAuditLog, type AuditLog } from './audit-log.ts';
import { clientClassFor } from './pg-hosts.ts';
import { withQueryTimeout } from './query-timeout.ts';

export interface DatabaseOptions {
  /**
   * postgres://user@host:port/database, or several hosts as libpq takes them
   * (postgres://user@db-1:5432,db-2:5432/herald?target_session_attrs=read-write, see pg-hosts.ts).
   */
  url: string;
  /** Every table lives in this schema (the connections' search_path). */
  schema: string;
  poolSize?: number;
  logger?: Logger;
  /** Called after every query; tests use it to count round trips. */
  onQuery?: (query: { sql: string; durationMs: number }) => void;
  /** Folder of NNNN_name.sql files; defaults to infra/db/migrations. */
  migrationsDir?: string;
  /**
   * false: commits return before their WAL is flushed (synchronous_commit = off). Only for writes
   * whose loss in a PostgreSQL crash is harmless, e.g. the HTTP API's job-id records (see apps/api).
   */
  synchronousCommit?: boolean;
  /**
   * Longest a new connection's start-up may take (default DEFAULT_CONNECT_TIMEOUT_MS): past it the
   * query fails as the database being unavailable, and the consumers defer their messages. Without
   * it a PostgreSQL that accepts connections but does not answer (a failover caught half-way) held
   * every query, and the messages behind it, for good. A wait for a busy pool's client is not bounded.
   */
  connectTimeoutMs?: number;
  /**
   * PostgreSQL ends a session idle inside a transaction this long (idle_in_transaction_session_timeout),
   * rolling it back and freeing its locks: rows a process claimed and then vanished with (its host
   * gone without closing the connection) are not held until the server's TCP keepalive gives up,
   * which defaults to over two hours. Undefined: no bound.
   */
  idleInTransactionTimeoutMs?: number;
  /**
   * Longest any one statement may go unanswered (query-timeout.ts): past it its connection is
   * closed and the statement fails as the database being unavailable. Undefined: no bound, as
   * for the CLI, whose operators' statements may rightly be long. Cursors are not cut by the client
   * (the server's statement_timeout, serverStatementTimeoutOf, counts a cursor's whole life: none is
   * used on a bounded pool), and migrate() runs on a connection of its own without it (an index
   * built on a large table).
   */
  queryTimeoutMs?: number;
  /**
   * The same bound for the delivery ledger's statements (a pusher's claims, renewals and marks),
   * shorter than a lease: a mark or a renewal sent to a primary that vanished is tried again on a
   * new connection before the claims it protects run out. Defaults to queryTimeoutMs.
   */
  ledgerTimeoutMs?: number;
  /** How migrate() waits for locks (migrations.ts); the defaults suit a service. */
  migrationLocks?: MigrationLockOptions;
}

/** The settings a service's config gives createDatabase (commonConfig: DATABASE_URL, DATABASE_SCHEMA, DATABASE_QUERY_TIMEOUT_MS). */
export interface DatabaseSettings {
  DATABASE_URL: string;
  DATABASE_SCHEMA: string;
  DATABASE_QUERY_TIMEOUT_MS?: number;
}

/** createDatabase's options from a service's settings (DATABASE_QUERY_TIMEOUT_MS 0: no bound). */
export function databaseOptionsOf(settings: DatabaseSettings): Pick<DatabaseOptions, 'url' | 'schema' | 'queryTimeoutMs'> {
  const timeout = settings.DATABASE_QUERY_TIMEOUT_MS;
  return { url: settings.DATABASE_URL, schema: settings.DATABASE_SCHEMA, ...(timeout !== undefined && timeout > 0 && { queryTimeoutMs: timeout }) };
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;
/** TCP keepalive on every connection: a peer gone without a word (a half-open connection) is found by the kernel's probes. */
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

export interface Database {
  readonly schema: string;
  readonly kysely: Kysely<HeraldTables>;
  readonly devices: DeviceRepository;
  readonly preferences: PreferenceRepository;
  readonly apps: AppRepository;
  readonly ledger: DeliveryLedger;
  /** Pushes held until their due time (scheduled deliveries). */
  readonly scheduled: ScheduledPushRepository;
  readonly rateLimits: RateLimitRepository;
  /** Accepted job ids (idempotency), per-job targeting and per-push outcomes (job status). */
  readonly jobs: JobRepository;
  /** Team API keys for the HTTP API (hashed). */
  readonly apiKeys: ApiKeyRepository;
  /** Webhook subscriptions (callback URL per watched resource), per team. */
  readonly subscriptions: SubscriptionRepository;
  /** Every operator write action: who, what, when. */
  readonly audit: AuditLog;
  /** Create the schema if missing and apply every pending migration (safe to run concurrently). */
  migrate(): Promise<void>;
  /**
   * Resolves once the schema holds every migration this release needs (REQUIRED_MIGRATION), asking
   * every `intervalMs` (5 s) and logging an error each minute while it does not: a service started
   * before `prepare` ran (every Deployment rolled at once) waits, not ready, instead of reading
   * columns that are not there and parking its messages. A database that does not answer is not
   * waited for here (the service starts, and its consumers defer as in any outage): a start during
   * a failover is let through unchecked.
   */
  untilMigrated(options?: {
    intervalMs?: number;
    /** Aborted (a stop asked for): the wait rejects with an AbortError. */
    signal?: AbortSignal;
    /** Told what the wait is for while it waits (readiness), and undefined once the schema holds it. */
    onWaiting?: (problem: string | undefined) => void;
  }): Promise<void>;
  /** Close the pool; idempotent. */
  close(): Promise<void>;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Thrown for options that can never work (bad schema name). */
export class DatabaseConfigError extends Error {
  override readonly name = 'DatabaseConfigError';
}

function queryLogger(options: DatabaseOptions): ((event: LogEvent) => void) | undefined {
  const { logger, onQuery } = options;
  if (logger === undefined && onQuery === undefined) return undefined;
  return (event) => {
    const durationMs = event.queryDurationMillis;
    if (event.level === 'error') {
      logger?.error({ err: event.error, sql: event.query.sql, durationMs }, 'query failed');
    } else {
      logger?.trace({ sql: event.query.sql, durationMs }, 'query');
    }
    onQuery?.({ sql: event.query.sql, durationMs });
  };
}

/**
 * The client class with a start-up deadline of its own. Not the pool's connectionTimeoutMillis:
 * pg-pool applies that to a query waiting in its queue behind busy clients too, and a healthy pool
 * under load then read as a database that is down (its consumers deferring everything).
 */
function withConnectTimeout(Base: typeof pg.Client, timeoutMs: number): typeof pg.Client {
  return class extends Base {
    constructor(config?: string | pg.ClientConfig) {
      super(typeof config === 'string' ? { connectionString: config, connectionTimeoutMillis: timeoutMs } : { ...config, connectionTimeoutMillis: timeoutMs });
    }
  };
}

/**
 * The server's own bound on a statement of a pool whose statements are bounded (statement_timeout),
 * a little under the client's: a server that is slow but alive (a lock held, a plan gone wrong)
 * cancels the statement itself, rolling it back (57014, deferred as the database being unavailable),
 * on a connection that stays open. Without it, the statement the client abandoned ran on, and an
 * insert committed after the client had given up on it and tried it again on a new connection,
 * each try one more backend at work. The client's own deadline remains for a host that answers
 * nothing at all.
 */
export const serverStatementTimeoutOf = (queryTimeoutMs: number): number => Math.max(1, Math.round(queryTimeoutMs - Math.min(1_000, queryTimeoutMs / 10)));

/** A pg Pool whose every connection has search_path = schema, keepalive, the start-up deadline and (if set) the statements' deadline. */
function poolFor(options: DatabaseOptions, queryTimeoutMs: number | undefined): pg.Pool {
  const { url, schema, poolSize = 10, logger } = options;
  // The pool's idle connections (its 'release', 'acquire' and 'remove' events): closed when a
  // statement of the pool goes unanswered, as connections to the same lost host.
  const idle = new Set<pg.PoolClient>();
  const closeIdle = (): void => {
    for (const client of idle) client.connection.stream.destroy(new Error('closed: another connection of its pool got no answer from PostgreSQL'));
    idle.clear();
  };
  const pool = new pg.Pool({
    connectionString: url,
    Client: withQueryTimeout(withConnectTimeout(clientClassFor(url), options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS), queryTimeoutMs, closeIdle),
    max: poolSize,
    options: [
      `-c search_path=${schema}`,
      ...(options.synchronousCommit === false ? ['-c synchronous_commit=off'] : []),
      ...(options.idleInTransactionTimeoutMs === undefined ? [] : [`-c idle_in_transaction_session_timeout=${Math.round(options.idleInTransactionTimeoutMs)}`]),
      // The session's bound is the longest any statement of the pool is given (the ledger's may be longer than the pool's).
      ...(queryTimeoutMs === undefined ? [] : [`-c statement_timeout=${serverStatementTimeoutOf(Math.max(queryTimeoutMs, options.ledgerTimeoutMs ?? 0))}`]),
    ].join(' '),
    application_name: 'herald',
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', (err) => logger?.warn({ err }, 'idle database connection failed'));
  // A checked-out client whose session ends (a PostgreSQL restart sends 57P01 to every session, a
  // statement past its deadline closes its connection) emits 'error' where the pool no longer
  // listens: that would crash the process. The query in flight fails on its own, and the pool
  // discards the broken client when it is released.
  pool.on('connect', (client) => client.on('error', (err) => logger?.warn({ err }, 'database connection lost')));
  pool.on('release', (_err: Error | undefined, client: pg.PoolClient) => idle.add(client));
  pool.on('acquire', (client) => idle.delete(client));
  pool.on('remove', (client) => idle.delete(client as pg.PoolClient));
  return pool;
}

/** Kysely over a pg Pool whose every connection has search_path = schema. */
export function createDatabase(options: DatabaseOptions): Database {
  const { url, schema, logger } = options;
  if (!SCHEMA_NAME.test(schema)) {
    throw new DatabaseConfigError(`schema "${schema}" must match ${String(SCHEMA_NAME)}`);
  }
  const pool = poolFor(options, options.queryTimeoutMs);
  const log = queryLogger(options);
  const kysely = new Kysely<HeraldTables>({ dialect: new SchemaPostgresDialect({ pool }, schema), ...(log ? { log } : {}) });
  let closed: Promise<void> | undefined;
  return {
    schema,
    kysely,
    devices: createDeviceRepository(kysely, pool),
    preferences: createPreferenceRepository(kysely),
    apps: createAppRepository(kysely),
    ledger: createDeliveryLedger(kysely, pool, options.ledgerTimeoutMs ?? options.queryTimeoutMs),
    scheduled: createScheduledPushRepository(kysely, { url, schema, logger }),
    rateLimits: createRateLimitRepository(kysely),
    jobs: createJobRepository(kysely, pool),
    apiKeys: createApiKeyRepository(kysely),
    subscriptions: createSubscriptionRepository(kysely),
    audit: createAuditLog(kysely),
    migrate: async () => {
      // On a connection of its own without queryTimeoutMs: building an index on a large table may
      // rightly take longer than any statement of the service's work.
      const untimed = new Kysely<HeraldTables>({ dialect: new SchemaPostgresDialect({ pool: poolFor({ ...options, poolSize: 1 }, undefined) }, schema) });
      try {
        const applied = await migrateToLatest(untimed, schema, options.migrationsDir, {
          ...options.migrationLocks,
          onLockWait: (wait) => {
            logger?.warn({ schema, ...wait }, 'a migration waits for a lock another transaction holds: rolled back and tried again');
            options.migrationLocks?.onLockWait?.(wait);
          },
          onAhead: (unknown) => {
            logger?.warn({ schema, unknown }, 'the schema is ahead of this release (migrations it does not know, every one it knows applied): left as it is');
            options.migrationLocks?.onAhead?.(unknown);
          },
        });
        if (applied.length > 0) logger?.info({ schema, applied }, 'database migrated');
      } finally {
        await untimed.destroy();
      }
    },
    untilMigrated: async ({ intervalMs = 5_000, signal, onWaiting } = {}) => {
      let lastSaid = 0;
      for (;;) {
        signal?.throwIfAborted();
        const held = await hasMigration(kysely, schema).catch((err: unknown) => {
          if (isDatabaseUnavailable(err)) return true;
          throw err;
        });
        if (held) {
          onWaiting?.(undefined);
          return;
        }
        onWaiting?.(`the schema ${schema} lacks migration ${REQUIRED_MIGRATION}: waiting for prepare`);
        if (Date.now() - lastSaid >= 60_000) {
          lastSaid = Date.now();
          logger?.error({ schema, needs: REQUIRED_MIGRATION }, 'the schema lacks a migration this release needs: waiting, not ready, until prepare (the migrations) has run');
        }
        await sleep(intervalMs, undefined, signal === undefined ? {} : { signal });
      }
    },
    close: () => (closed ??= kysely.destroy()),
  };
}

/** Drop the Database's schema and everything in it, then close it. For tests and teardown only. */
export async function dropSchemaAndClose(db: Database): Promise<void> {
  try {
    await sql`drop schema if exists ${sql.id(db.schema)} cascade`.execute(db.kysely);
  } finally {
    await db.close();
  }
}
