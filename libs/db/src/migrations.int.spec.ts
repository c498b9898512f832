import { randomBytes, randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createSpecDatabase, SPEC_DATABASE_URL } from './spec-database.ts';
import { createDatabase, DatabaseConfigError, dropSchemaAndClose, type Database } from './database.ts';
import { DEFAULT_MIGRATIONS_DIR, REQUIRED_MIGRATION } from './migrations.ts';

/** Every migration in the repo, in order (0001_apps, 0002_devices, …). */
const ALL_MIGRATIONS = readdirSync(DEFAULT_MIGRATIONS_DIR).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort().map((f) => f.replace(/\.sql$/, ''));

const opened: Database[] = [];
afterAll(async () => {
  for (const db of opened) await dropSchemaAndClose(db);
});

async function tablesIn(db: Database): Promise<string[]> {
  const { rows } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = ${db.schema} order by table_name`.execute(db.kysely);
  return rows.map((r) => r.table_name);
}

async function appliedMigrations(db: Database): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db.kysely);
  return rows.map((r) => r.name);
}

describe('migrate', () => {
  it('creates the schema and every table, and a second run changes nothing', async () => {
    const schema = `herald_mig_${randomBytes(4).toString('hex')}`;
    const db = createDatabase({ url: SPEC_DATABASE_URL, schema });
    opened.push(db);
    await db.migrate();
    const first = await appliedMigrations(db);
    expect(first.slice(0, 4)).toEqual(['0001_apps', '0002_devices', '0003_preferences', '0004_delivery_ledger']);
    expect(first).toEqual(ALL_MIGRATIONS);
    expect(await tablesIn(db)).toEqual(
      expect.arrayContaining(['apps', 'delivery_ledger', 'devices', 'kysely_migration', 'mutes', 'opt_outs']),
    );
    await db.apps.upsert({ id: 'kept' });
    await db.migrate();
    expect(await appliedMigrations(db)).toEqual(first);
    expect((await db.apps.get('kept'))?.id).toBe('kept');
  });

  it('0033 gives a job whose pushes were stored before 0032 the latest due time of those pushes', async () => {
    // A database at 0032 whose job rows were written before it (last_due_at NULL).
    const dir = mkdtempSync(join(tmpdir(), 'herald-mig-'));
    for (const name of ALL_MIGRATIONS.filter((m) => m <= '0032')) copyFileSync(join(DEFAULT_MIGRATIONS_DIR, `${name}.sql`), join(dir, `${name}.sql`));
    const schema = `herald_mig_${randomBytes(4).toString('hex')}`;
    const at0032 = createDatabase({ url: SPEC_DATABASE_URL, schema, migrationsDir: dir });
    await at0032.migrate();
    await at0032.close();
    const db = createDatabase({ url: SPEC_DATABASE_URL, schema });
    opened.push(db);
    for (const id of ['stored', 'none-stored']) {
      await sql`insert into jobs (id, app, accepted_at, published_at, targeted) values (${id}, 'demo', now() - interval '40 days', now(), 2)`.execute(db.kysely);
    }
    for (const days of [10, 20]) {
      await sql`insert into scheduled_pushes (platform, due_at, job_id, push_id, payload) values ('apns', '2027-01-01T00:00:00Z'::timestamptz + ${`${days} days`}::interval, 'stored', ${randomUUID()}::uuid, '{}'::json)`.execute(db.kysely);
    }
    await db.migrate();
    const { rows } = await sql<{ id: string; last_due_at: Date | null }>`select id, last_due_at from jobs order by id`.execute(db.kysely);
    expect(rows.map((r) => [r.id, r.last_due_at?.toISOString() ?? null])).toEqual([
      ['none-stored', null],
      ['stored', '2027-01-21T00:00:00.000Z'],
    ]);
  });

  it('upgrading, commits each migration on its own: one that fails leaves those before it applied, and nothing of its own', async () => {
    // In one transaction, a lock the first took (0032's ACCESS EXCLUSIVE on jobs) was held through
    // the rest (0033's backfill), and one failure undid them all.
    const dir = mkdtempSync(join(tmpdir(), 'herald-mig-'));
    writeFileSync(join(dir, '0001_first.sql'), 'create table first_t (id int);');
    const schema = `herald_mig_${randomBytes(4).toString('hex')}`;
    const db = createDatabase({ url: SPEC_DATABASE_URL, schema, migrationsDir: dir });
    opened.push(db);
    await db.migrate();
    writeFileSync(join(dir, '0002_second.sql'), 'create table second_t (id int);');
    writeFileSync(join(dir, '0003_third.sql'), 'create table third_t (id int);');
    writeFileSync(join(dir, '0004_broken.sql'), 'create table fourth_t (id int); select 1/0;');
    await expect(db.migrate()).rejects.toThrow(/migration 0004_broken failed in schema .*division by zero/);
    expect(await appliedMigrations(db)).toEqual(['0001_first', '0002_second', '0003_third']);
    expect(await tablesIn(db)).toEqual(expect.arrayContaining(['first_t', 'second_t', 'third_t']));
    expect(await tablesIn(db)).not.toContain('fourth_t');
  });

  it('a new schema whose migrations fail is left with none applied, and migrates once they are mended', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-mig-'));
    writeFileSync(join(dir, '0001_first.sql'), 'create table first_t (id int);');
    writeFileSync(join(dir, '0002_broken.sql'), 'select 1/0;');
    const schema = `herald_mig_${randomBytes(4).toString('hex')}`;
    const db = createDatabase({ url: SPEC_DATABASE_URL, schema, migrationsDir: dir });
    opened.push(db);
    await expect(db.migrate()).rejects.toThrow(/migration 0002_broken failed/);
    expect(await appliedMigrations(db)).toEqual([]);
    writeFileSync(join(dir, '0002_broken.sql'), 'create table second_t (id int);');
    await db.migrate();
    expect(await appliedMigrations(db)).toEqual(['0001_first', '0002_broken']);
  });

  it('is safe when several starters migrate the same new schema at once', async () => {
    const schema = `herald_race_${randomBytes(4).toString('hex')}`;
    const dbs = Array.from({ length: 4 }, () => createDatabase({ url: SPEC_DATABASE_URL, schema, poolSize: 2 }));
    const [first, ...rest] = dbs;
    if (first === undefined) throw new Error('no databases');
    opened.push(first);
    try {
      await Promise.all(dbs.map((db) => db.migrate()));
    } finally {
      await Promise.all(rest.map((db) => db.close()));
    }
    expect(await appliedMigrations(first)).toEqual(ALL_MIGRATIONS);
  });

  it('migrates while other clients create and drop schemas of their own', async () => {
    // The Migrator first reads every schema's tables; one dropped meanwhile failed that read
    // (seen when test files ran side by side: "schema herald_jobs_… does not exist").
    const churn = createDatabase({ url: SPEC_DATABASE_URL, schema: `herald_churn_${randomBytes(4).toString('hex')}`, poolSize: 3 });
    let churning = true;
    const churner = async (n: number): Promise<void> => {
      for (let i = 0; churning; i++) {
        const other = sql.id(`herald_churn_${randomBytes(4).toString('hex')}_${n}_${i}`);
        await sql`create schema ${other}`.execute(churn.kysely);
        await sql`create table ${other}.t (id serial primary key, a text, b text)`.execute(churn.kysely);
        await sql`drop schema ${other} cascade`.execute(churn.kysely);
      }
    };
    const churners = [churner(1), churner(2), churner(3)];
    try {
      for (let i = 0; i < 10; i++) {
        const db = createDatabase({ url: SPEC_DATABASE_URL, schema: `herald_churned_${randomBytes(4).toString('hex')}`, poolSize: 1 });
        opened.push(db);
        await db.migrate();
        expect(await appliedMigrations(db)).toEqual(ALL_MIGRATIONS);
      }
    } finally {
      churning = false;
      await Promise.all(churners);
      await churn.close();
    }
  });

  it('keeps test schemas apart: a row in one schema is invisible in another', async () => {
    const a = await createSpecDatabase('iso_a');
    const b = await createSpecDatabase('iso_b');
    try {
      await a.db.apps.upsert({ id: 'only-in-a' });
      expect(await a.db.apps.list()).toHaveLength(1);
      expect(await b.db.apps.list()).toHaveLength(0);
    } finally {
      await a.drop();
      await b.drop();
    }
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from information_schema.schemata where schema_name in (${a.schema}, ${b.schema})`.execute(
      (opened[0] as Database).kysely,
    );
    expect(rows[0]?.n).toBe(0);
  });

  it('rejects a schema name that is not a plain identifier', () => {
    expect(() => createDatabase({ url: SPEC_DATABASE_URL, schema: 'x; drop table devices' })).toThrow(DatabaseConfigError);
  });
});

describe('migrate beside a long transaction', () => {
  /** A schema at 0001 (table t, one row) and a pending 0002 that alters t, with a client of its own for the test's transactions. */
  async function schemaWithPendingAlter(name: string, lockWaitMs: number) {
    const dir = mkdtempSync(join(tmpdir(), 'herald-mig-'));
    writeFileSync(join(dir, '0001_t.sql'), 'create table t (id int primary key); insert into t values (1);');
    const schema = `herald_${name}_${randomBytes(4).toString('hex')}`;
    const waits: Array<{ migration: string; holders: string[] }> = [];
    const db = createDatabase({
      url: SPEC_DATABASE_URL,
      schema,
      migrationsDir: dir,
      migrationLocks: { lockTimeoutMs: 200, lockWaitMs, onLockWait: (w) => waits.push(w) },
    });
    opened.push(db);
    await db.migrate();
    writeFileSync(join(dir, '0002_t_note.sql'), 'alter table t add column note text;');
    const other = createDatabase({ url: SPEC_DATABASE_URL, schema, poolSize: 2 });
    return { db, other, waits, close: () => other.close() };
  }

  it('is tried again while another transaction holds the table, serving its readers meanwhile, and applied once it ends', async () => {
    const { db, other, waits, close } = await schemaWithPendingAlter('lockwait', 30_000);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    try {
      let locked!: () => void;
      const holds = new Promise<void>((resolve) => (locked = resolve));
      const holding = other.kysely.connection().execute(async (conn) => {
        await sql`begin`.execute(conn);
        await sql`set application_name = 'ops-psql-session'`.execute(conn);
        await sql`select * from t`.execute(conn);
        locked();
        await released;
        await sql`commit`.execute(conn);
      });
      await holds;
      const migrating = db.migrate();
      // Kysely's own migration lock is one for every schema of the database: other files' new schemas may hold it a while.
      await expect.poll(() => waits.length, { timeout: 20_000 }).toBeGreaterThan(0);
      // A reader of t, queued behind the migration's exclusive lock, waits at most the lock timeout, not until the holder ends.
      const { rows } = await sql<{ id: number }>`select id from t`.execute(other.kysely);
      expect(rows).toEqual([{ id: 1 }]);
      expect(waits[0]?.migration).toBe('0002_t_note');
      expect(waits[0]?.holders.join()).toMatch(/pid \d+ \(role \w+, ops-psql-session, idle in transaction, in a transaction for \d+ s, on t: select \* from t\)/);
      release();
      await holding;
      await migrating;
      expect(await appliedMigrations(db)).toEqual(['0001_t', '0002_t_note']);
    } finally {
      release();
      await close();
    }
  });

  it('fails naming what holds the lock once it has waited lockWaitMs, leaving the migration unapplied', async () => {
    const { db, other, close } = await schemaWithPendingAlter('lockfail', 2_500);
    try {
      await other.kysely.connection().execute(async (conn) => {
        await sql`begin`.execute(conn);
        await sql`set application_name = 'nightly-pg-dump'`.execute(conn);
        await sql`select * from t`.execute(conn);
        await expect(db.migrate()).rejects.toThrow(/migration 0002_t_note in schema \S+ could not take its locks within 2500 ms; held by pid \d+ \(role \w+, nightly-pg-dump, /);
        await sql`rollback`.execute(conn);
      });
      expect(await appliedMigrations(db)).toEqual(['0001_t']);
    } finally {
      await close();
    }
  });
});

describe('migrate a schema ahead of the release (a rollback)', () => {
  it('leaves a schema holding migrations this release does not know, when every one it knows is applied; refuses one it lacks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-mig-'));
    writeFileSync(join(dir, '0001_first.sql'), 'create table first_t (id int);');
    writeFileSync(join(dir, '0002_second.sql'), 'create table second_t (id int);');
    const schema = `herald_ahead_${randomBytes(4).toString('hex')}`;
    const newer = createDatabase({ url: SPEC_DATABASE_URL, schema, migrationsDir: dir });
    opened.push(newer);
    await newer.migrate();
    // The release before: it knows 0001 only.
    const olderDir = mkdtempSync(join(tmpdir(), 'herald-mig-'));
    copyFileSync(join(dir, '0001_first.sql'), join(olderDir, '0001_first.sql'));
    const ahead: string[][] = [];
    const older = createDatabase({ url: SPEC_DATABASE_URL, schema, migrationsDir: olderDir, migrationLocks: { onAhead: (u) => ahead.push(u) } });
    try {
      await older.migrate();
      expect(ahead).toEqual([['0002_second']]);
      expect(await appliedMigrations(newer)).toEqual(['0001_first', '0002_second']);
      // A release that lacks 0002 and brings a 0003 of its own cannot run on this schema.
      writeFileSync(join(olderDir, '0003_other.sql'), 'create table other_t (id int);');
      await expect(older.migrate()).rejects.toThrow(/holds migrations this release does not know \(0002_second\) and lacks ones it needs \(0003_other\)/);
    } finally {
      await older.close();
    }
  });
});

describe('a service started before prepare', () => {
  it('needs the newest migration: REQUIRED_MIGRATION is the last file (raise it with every migration)', () => {
    expect(REQUIRED_MIGRATION).toBe(ALL_MIGRATIONS.at(-1));
  });

  it('waits, not ready, until the schema holds the migration this release needs; a database that does not answer is not waited for', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-mig-'));
    writeFileSync(join(dir, '0001_first.sql'), 'create table first_t (id int);');
    const schema = `herald_gate_${randomBytes(4).toString('hex')}`;
    const db = createDatabase({ url: SPEC_DATABASE_URL, schema, migrationsDir: dir });
    opened.push(db);
    // No schema at all yet, then one a release behind.
    let through = false;
    const waiting = db.untilMigrated({ intervalMs: 50 }).then(() => (through = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(through).toBe(false);
    await db.migrate();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(through).toBe(false);
    // prepare of this release ran.
    await sql`insert into kysely_migration (name, timestamp) values (${REQUIRED_MIGRATION}, ${new Date().toISOString()})`.execute(db.kysely);
    await waiting;
    expect(through).toBe(true);
    const away = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', schema, connectTimeoutMs: 500 });
    try {
      await away.untilMigrated({ intervalMs: 50 });
    } finally {
      await away.close();
    }
  });
});
