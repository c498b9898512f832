import { createProviderLaneStore } from '@herald/db';
import { createLogger } from '@herald/logging';
import { thresholdConfig, type AlarmTransition } from '@herald/monitoring';
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

/** The monitor as main.ts wires it: PostgreSQL's conditions read by the scheduled counts, evaluated with each poll of the queues (none here). */
function startMonitor() {
  const said: AlarmTransition[] = [];
  const metrics = createMonitorMetrics(new Registry());
  const scheduled = startScheduledCounts({ db: t.db, pollMs: 100, overdueMs: 300_000, certificateWarnMs: 30 * 86_400_000, providerDownForMs: GRACE_MS, unreachableForMs: 30_000, metrics, logger });
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
});
