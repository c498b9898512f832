import { createDatabase, createProviderLaneStore } from '@herald/db';
import { createLogger } from '@herald/logging';
import { thresholdConfig, type AlarmCondition, type AlarmTransition } from '@herald/monitoring';
import { Registry } from '@herald/runtime';
import { createTestDatabase, waitFor, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { History } from './history.ts';
import { createMonitorMetrics } from './monitor-metrics.ts';
import { startQueueMonitor } from './queue-monitor.ts';
import { startScheduledCounts } from './scheduled-counts.ts';

const logger = createLogger({ service: 'provider-down-spec', level: 'silent', format: 'json' });
const GRACE_MS = 2_000;
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('providerdown');
});
afterAll(() => t.drop());

/**
 * The monitor as main.ts wires it: PostgreSQL's conditions read by the scheduled counts, evaluated
 * with each poll of the queues (none here). A read slower than its poll counts as failed, and the
 * lanes down before it are then held (default 30 s, a pusher's refresh): on a loaded CI machine a
 * 100 ms read was slow, so the poll here is 500 ms, and the hold shorter than any wait below.
 */
function startMonitor() {
  const said: AlarmTransition[] = [];
  const metrics = createMonitorMetrics(new Registry());
  const scheduled = startScheduledCounts({ db: t.db, pollMs: 500, overdueMs: 300_000, certificateWarnMs: 30 * 86_400_000, providerDownForMs: GRACE_MS, laneHoldMs: 500, unreachableForMs: 30_000, metrics, logger });
  const monitor = startQueueMonitor({
    api: { queues: async () => [] },
    vhost: '/',
    pollMs: 50,
    thresholds: thresholdConfig(),
    history: new History(60_000),
    metrics,
    logger,
    otherConditions: scheduled.conditions,
    announce: (transition) => void said.push(transition),
  });
  const stop = async (): Promise<void> => {
    await monitor.stop();
    await scheduled.stop();
  };
  return { said, stop };
}

describe('the monitor and the provider lanes the pushers take to be down', () => {
  it('raises provider-down on lane.<platform>/<lane> once a lane has stayed down for the grace, and clears it when the lane answers again', async () => {
    const apns = createProviderLaneStore(t.db.kysely, { instance: 'apns-pusher@a:1', platform: 'apns' });
    const fcm = createProviderLaneStore(t.db.kysely, { instance: 'fcm-pusher@b:2', platform: 'fcm' });
    const m = startMonitor();
    try {
      // An FCM lane down a moment, up again within the grace: no alarm.
      await fcm.record([{ lane: 'fcm (shared connection)', downForMs: 0 }]);
      const down = Date.now();
      await apns.record([{ lane: 'apns (shared connection)', downForMs: 0 }]);
      await new Promise((r) => setTimeout(r, GRACE_MS / 3));
      await fcm.record([]);

      const fired = await waitFor('the alarm', () => m.said.find((s) => s.alarm.alarm === 'provider-down' && s.state === 'firing'));
      expect(fired.at - down).toBeGreaterThanOrEqual(GRACE_MS);
      expect(fired.alarm).toMatchObject({ queue: 'lane.apns/apns (shared connection)', threshold: GRACE_MS / 1000 });
      expect(fired.alarm.summary).toMatch(/^apns provider lane 'apns \(shared connection\)' down for \d+ s in apns-pusher@a:1: its sends get no answer or server errors/);

      await apns.record([]);
      await waitFor('resolved', () => m.said.find((s) => s.alarm.alarm === 'provider-down' && s.state === 'resolved'));
      expect(m.said.map((s) => [s.alarm.queue, s.state])).toEqual([
        ['lane.apns/apns (shared connection)', 'firing'],
        ['lane.apns/apns (shared connection)', 'resolved'],
      ]);
    } finally {
      await m.stop();
      await apns.record([]);
      await fcm.record([]);
    }
  });

  it('says a lane down for longer than the grace at its first read, without waiting the grace again (a monitor started during the outage)', async () => {
    const web = createProviderLaneStore(t.db.kysely, { instance: 'web-pusher@c:3', platform: 'web' });
    await web.record([{ lane: 'updates.push.services.mozilla.com', downForMs: 3_600_000 }]);
    const started = Date.now();
    const m = startMonitor();
    try {
      const fired = await waitFor('the alarm', () => m.said.find((s) => s.alarm.alarm === 'provider-down' && s.state === 'firing'));
      expect(fired.at - started).toBeLessThan(GRACE_MS);
      expect(fired.alarm).toMatchObject({ queue: 'lane.web/updates.push.services.mozilla.com', value: 3_600 });
      expect(fired.alarm.summary).toMatch(/^web provider lane 'updates\.push\.services\.mozilla\.com' down for 60 min in web-pusher@c:3: /);
    } finally {
      await m.stop();
      await web.record([]);
    }
  });

  // PostgreSQL away longer than the rows' staleness (90 s): no pusher could write its lanes either,
  // so the monitor's first reads after it find every row stale until each pusher writes again. It
  // resolved provider-down there, and raised it again at the pusher's next write: a false
  // "resolved" in the chat and a second page.
  it('holds a lane down through a PostgreSQL outage that left its rows stale until its pusher writes again, and lets one whose pusher never does go after the hold', async () => {
    const back = createProviderLaneStore(t.db.kysely, { instance: 'apns-pusher@back:4', platform: 'apns' });
    const gone = createProviderLaneStore(t.db.kysely, { instance: 'fcm-pusher@gone:5', platform: 'fcm' });
    const apnsLane = { lane: 'apns (shared connection)', downForMs: 3_600_000 };
    await back.record([apnsLane]);
    await gone.record([{ lane: 'fcm (shared connection)', downForMs: 3_600_000 }]);
    const APNS = 'lane.apns/apns (shared connection)';
    const FCM = 'lane.fcm/fcm (shared connection)';
    const HOLD_MS = 2_000;
    const metrics = createMonitorMetrics(new Registry());
    const counts = startScheduledCounts({ db: t.db, pollMs: 300, overdueMs: 300_000, certificateWarnMs: 30 * 86_400_000, providerDownForMs: GRACE_MS, laneHoldMs: HOLD_MS, unreachableForMs: 30_000, metrics, logger });
    // What the monitor holds each moment, sampled every 10 ms.
    const samples: Array<{ at: number; lanes: string[]; unreachable: boolean }> = [];
    const sample = (cs: readonly AlarmCondition[]) => ({ at: Date.now(), lanes: cs.filter((c) => c.alarm === 'provider-down').map((c) => c.queue).sort(), unreachable: cs.some((c) => c.alarm === 'database-unreachable') });
    const sampler = setInterval(() => samples.push(sample(counts.conditions())), 10);
    const locker = createDatabase({ url: t.url, schema: t.schema, poolSize: 1 });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const lockTaken = new Promise<void>((r) => (locked = r));
    try {
      await waitFor('both lanes read down', () => sample(counts.conditions()).lanes.length === 2);
      samples.length = 0;
      // The outage, as the monitor and the pushers see it: the lanes cannot be read (their table
      // locked), and when they can again, every row is as stale as a 100 s outage leaves it.
      const locking = locker.kysely
        .transaction()
        .execute(async (trx) => {
          // ALTER TABLE takes the table's ACCESS EXCLUSIVE lock, held to the commit; the column goes again.
          await trx.schema.alterTable('provider_lanes').addColumn('lock_probe', 'integer').execute();
          await trx.updateTable('provider_lanes').set({ seen_at: new Date(Date.now() - 100_000) }).execute();
          locked();
          await held;
          await trx.schema.alterTable('provider_lanes').dropColumn('lock_probe').execute();
        });
      await lockTaken;
      await waitFor('database-unreachable', () => sample(counts.conditions()).unreachable, { timeoutMs: 5_000 });
      release();
      await locking;
      const returned = Date.now();
      // The apns-pusher's retry writes within a few hundred ms of the database's return; the
      // fcm-pusher died in the outage and never writes again.
      await new Promise((r) => setTimeout(r, 300));
      await back.record([apnsLane]);
      await waitFor('the fcm lane let go after the hold', () => !sample(counts.conditions()).lanes.includes(FCM), { timeoutMs: 10_000 });
      const letGo = Date.now();
      await new Promise((r) => setTimeout(r, 500));
      clearInterval(sampler);
      // The apns lane never left; the fcm lane stayed through the hold (at least HOLD_MS from the first good read, after `returned`).
      expect(samples.filter((s) => !s.lanes.includes(APNS))).toEqual([]);
      expect(samples.filter((s) => s.at < returned + HOLD_MS - 100 && !s.lanes.includes(FCM))).toEqual([]);
      expect(letGo - returned).toBeLessThan(HOLD_MS + 2_000);
    } finally {
      clearInterval(sampler);
      release();
      await counts.stop();
      await locker.close();
      await back.record([]);
      await gone.record([]);
    }
  });
});
