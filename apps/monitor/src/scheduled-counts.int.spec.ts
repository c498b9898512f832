import { createDatabase } from '@herald/db';
import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, TEST_DATABASE_URL, waitFor, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createMonitorMetrics } from './monitor-metrics.ts';
import { startScheduledCounts } from './scheduled-counts.ts';

const DAY_MS = 86_400_000;
const logger = createLogger({ service: 'scheduled-counts-spec', level: 'silent', format: 'json' });
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('schedcounts');
});
afterAll(() => t.drop());

describe('the scheduled counts the monitor reads', () => {
  it('reads without a condition while PostgreSQL answers, and raises database-unreachable while its reads fail', async () => {
    const options = { pollMs: 50, overdueMs: 300_000, certificateWarnMs: 30 * DAY_MS, providerDownForMs: 60_000, unreachableForMs: 30_000, metrics: createMonitorMetrics(new Registry()), logger };
    // A read gets a poll interval to answer (a first read on a busy machine took over 50 ms).
    const healthy = startScheduledCounts({ db: t.db, ...options, pollMs: 1000 });
    try {
      await waitFor('a first read', () => (healthy.current().at === null ? undefined : true));
      expect(healthy.conditions()).toEqual([]);
    } finally {
      await healthy.stop();
    }
    // A schema with no Herald tables: every read fails, as against a database the monitor cannot use.
    const blind = createDatabase({ url: TEST_DATABASE_URL, schema: 'schedcounts_none', poolSize: 1 });
    // A read gets a poll interval to answer: a second here, so a new connection on a busy machine
    // fails for the missing table, not for time (50 ms was seen to pass before PostgreSQL answered).
    const failing = startScheduledCounts({ db: blind, ...options, pollMs: 1000, metrics: createMonitorMetrics(new Registry()) });
    try {
      const condition = await waitFor('the condition', () => failing.conditions().find((c) => c.alarm === 'database-unreachable'));
      expect(condition).toMatchObject({ queue: '*', forMs: 30_000 });
      expect(condition.summary).toMatch(/^the monitor cannot read the scheduled pushes, the apps' APNs certificates and the provider lanes down from PostgreSQL \(scheduled-overdue, the certificate alarms and provider-down are blind meanwhile\): .*scheduled_pushes/);
    } finally {
      await failing.stop();
      await blind.close();
    }
  });

  it('raises database-unreachable when a read does not answer within a poll interval (a connection a partition left open)', async () => {
    const locker = createDatabase({ url: t.url, schema: t.schema, poolSize: 1 });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const lockTaken = new Promise<void>((r) => (locked = r));
    // Every read of scheduled_pushes waits behind this lock until it is released: an ALTER TABLE
    // takes the table's ACCESS EXCLUSIVE lock; the transaction is then rolled back.
    const locking = locker.kysely
      .transaction()
      .execute(async (trx) => {
        await trx.schema.alterTable('scheduled_pushes').addColumn('lock_probe', 'integer').execute();
        locked();
        await held;
        throw new Error('roll back');
      })
      .catch(() => undefined);
    await lockTaken;
    const counts = startScheduledCounts({ db: t.db, pollMs: 300, overdueMs: 300_000, certificateWarnMs: 30 * DAY_MS, providerDownForMs: 60_000, unreachableForMs: 30_000, metrics: createMonitorMetrics(new Registry()), logger });
    try {
      const condition = await waitFor('the condition', () => counts.conditions().find((c) => c.alarm === 'database-unreachable'), { timeoutMs: 5_000 });
      expect(condition.summary).toMatch(/no answer from PostgreSQL within 300 ms$/);
      release();
      await waitFor('the condition to go once reads answer again', () => (counts.conditions().length === 0 ? true : undefined), { timeoutMs: 5_000 });
    } finally {
      release();
      await locking;
      await counts.stop();
      await locker.close();
    }
  });

  it("raises apns-certificate-expiring for an enabled app whose APNs certificate expires within the warning or has expired, and exports every expiry", async () => {
    const now = Date.now();
    const apps = [
      { id: 'soon', at: now + 10 * DAY_MS + 3_600_000, enabled: true },
      { id: 'gone', at: now - 2 * DAY_MS, enabled: true },
      { id: 'later', at: now + 60 * DAY_MS, enabled: true },
      { id: 'off', at: now + 3 * DAY_MS, enabled: false },
    ];
    for (const a of apps) {
      await t.db.kysely
        .insertInto('apps')
        .values({ id: a.id, apns_topic: null, fcm_project_id: null, enabled: a.enabled, apns_auth: 'certificate', apns_secret: 'sealed', apns_certificate_expires_at: new Date(a.at) })
        .execute();
    }
    const registry = new Registry();
    const counts = startScheduledCounts({ db: t.db, pollMs: 50, overdueMs: 300_000, certificateWarnMs: 30 * DAY_MS, providerDownForMs: 60_000, unreachableForMs: 30_000, metrics: createMonitorMetrics(registry), logger });
    try {
      await waitFor('a first read', () => (counts.readAt() === 0 ? undefined : true));
      const found = counts.conditions().filter((c) => c.alarm.startsWith('apns-certificate-'));
      expect(found.map((c) => [c.alarm, c.queue, c.value, c.threshold])).toEqual([
        ['apns-certificate-expiring', 'app.gone', -2, 30],
        ['apns-certificate-expired', 'app.gone', -2, 0],
        ['apns-certificate-expiring', 'app.soon', 10, 30],
      ]);
      expect(found[1]?.summary).toMatch(/^app "gone"'s APNs certificate expired on \d{4}-.*: every APNs push of the app is refused; renew it/);
      expect(found[2]?.summary).toMatch(/^app "soon"'s APNs certificate expires on \d{4}-.*, in 10 days: then every APNs push of the app is refused; renew it .*herald apps rotate soon/);
      const metrics = await registry.metrics();
      for (const a of apps.filter((x) => x.enabled)) expect(metrics).toContain(`herald_apns_certificate_expiry_timestamp_seconds{app="${a.id}"} ${a.at / 1000}`);
      expect(metrics).not.toContain('herald_apns_certificate_expiry_timestamp_seconds{app="off"}');
    } finally {
      await counts.stop();
    }
  });

  // A monitor let through before `prepare` (an upgrade applied all at once, or a start during a
  // failover that untilMigrated lets pass unchecked): the missing table was read in the same try as
  // the others, so scheduled-overdue and the certificate alarms stopped, and database-unreachable
  // fired saying PostgreSQL could not be read.
  it('reads on without provider_lanes (migration 0043 not applied): the certificate alarms stand, no database-unreachable, and the log says provider-down is blind', async () => {
    const unprepared = await createTestDatabase('schedcountsnolanes');
    await unprepared.db.kysely.schema.dropTable('provider_lanes').execute();
    await unprepared.db.kysely
      .insertInto('apps')
      .values({ id: 'gone', apns_topic: null, fcm_project_id: null, enabled: true, apns_auth: 'certificate', apns_secret: 'sealed', apns_certificate_expires_at: new Date(Date.now() - 2 * DAY_MS) })
      .execute();
    const logger = createLogger({ service: 'scheduled-counts-spec', level: 'silent', format: 'json' });
    const errors = vi.spyOn(logger, 'error');
    const counts = startScheduledCounts({
      db: unprepared.db,
      pollMs: 250,
      overdueMs: 300_000,
      certificateWarnMs: 30 * DAY_MS,
      providerDownForMs: 60_000,
      unreachableForMs: 30_000,
      metrics: createMonitorMetrics(new Registry()),
      logger,
    });
    try {
      const expired = await waitFor('the certificate alarm', () => counts.conditions().find((c) => c.alarm === 'apns-certificate-expired'), { timeoutMs: 5_000 });
      expect(expired.queue).toBe('app.gone');
      // Reads on, and says it once.
      let last = counts.readAt();
      let reads = 0;
      await waitFor('two more reads', () => {
        if (counts.readAt() > last) [last, reads] = [counts.readAt(), reads + 1];
        return reads >= 2;
      }, { intervalMs: 10 });
      expect(counts.conditions().map((c) => c.alarm)).toEqual(['apns-certificate-expiring', 'apns-certificate-expired']);
      expect(errors.mock.calls).toEqual([
        [
          { schema: unprepared.schema, table: 'provider_lanes' },
          'the schema has no provider_lanes (migration 0043 not applied: has prepare run?): provider-down cannot be seen until it has; scheduled-overdue and the certificate alarms go on',
        ],
      ]);
    } finally {
      await counts.stop();
      await unprepared.drop();
    }
  });
});
