import { mkdirSync, writeFileSync } from 'node:fs';
import { Queues } from '@herald/contracts';
import { queueInfo, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { herald as runHerald } from '../support/cli.ts';
import { apnsToken, fcmToken, job, registerDevices, uniqueUser, type Device } from '../support/fixtures.ts';
import { metric } from '../support/metrics.ts';
import { monitorStatus, monitorUrl, secondsBetween } from '../support/monitor-client.ts';
import { delivered } from '../support/sandbox-client.ts';
import { startSystem, type System } from '../support/system.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * RabbitMQ's management API refreshes queue statistics every 5 s (collect_statistics_interval).
 * The monitor overlays live depth and consumer counts, but rates (drain time) still come from
 * those statistics, so the bounds below allow for that lag; plus a poll and slack.
 */
const STATS_LAG_S = 5;
const POLL_MS = 500;
const NO_CONSUMER_FOR_MS = 2_000;
const BACKLOG = 40;
const BACKLOG_FOR_MS = 1_000;
const DRAIN_BOUND_S = 8;
const DRAIN_FOR_MS = 1_000;
const FCM_RATE = 4;
const FCM_PUSHES = 150;
const OVERDUE_S = 2;

const THRESHOLDS = {
  '*': { noConsumerForMs: 60_000 },
  [Queues.apnsSend]: { noConsumerForMs: NO_CONSUMER_FOR_MS, backlog: 1_000_000 },
  [Queues.fcmSend]: { backlog: BACKLOG, backlogForMs: BACKLOG_FOR_MS, drainSeconds: DRAIN_BOUND_S, drainForMs: DRAIN_FOR_MS, drainMinMessages: 20 },
};

const measured: Record<string, { firedAfterS?: number; queuedAfterS?: number; resolvedAfterS?: number; configuredDelayS: number; pusherExitedAfterS?: number }> = {};
const record = (what: string, entry: (typeof measured)[string]): void => {
  measured[what] = { ...measured[what], ...entry };
  console.log(`[monitor] ${what}: ${JSON.stringify(measured[what])}`);
};

describe('the monitor raises and clears alarms, and tells a webhook', () => {
  let sys: System;
  let hook: WebhookReceiver;

  beforeAll(async () => {
    hook = await startWebhookReceiver();
    sys = await startSystem({
      // A small prefetch keeps the throttled backlog ready on the queue, where the monitor counts
      // it live; messages a consumer holds unacknowledged are only in the management API's
      // statistics, which lag by their collection interval (see the README's monitor section).
      env: {
        MONITOR_POLL_MS: String(POLL_MS),
        MONITOR_THRESHOLDS: JSON.stringify(THRESHOLDS),
        MONITOR_WEBHOOK_URL: hook.url,
        MONITOR_SCHEDULED_POLL_MS: String(POLL_MS),
        MONITOR_SCHEDULED_OVERDUE_S: String(OVERDUE_S),
        PUSHER_PREFETCH: '20',
        // One push a message whatever the environment says, so the backlog the thresholds below are
        // set for is counted in pushes: alarms compare queue depths, which count messages (ADR 0016).
        PUSH_PACK_SIZE: '1',
        PUSHER_BATCH_SIZE: '20',
      },
    });
  });
  afterAll(async () => {
    await sys?.stop();
    await hook?.close();
    mkdirSync('test-results', { recursive: true });
    writeFileSync('test-results/alarm-delays.json', `${JSON.stringify(measured, null, 2)}\n`);
  });

  /** `herald status` as a person runs it (async: the webhook receiver lives in this process). */
  const herald = async (env: Record<string, string>, ...args: string[]) => {
    const status = await runHerald({ ...sys.env, ...env }, 'status', ...args);
    expect(status.code, status.stderr).toBe(0);
    return status.stdout;
  };
  const alarmMetric = (alarm: string, queue: string) => metric(sys.service('monitor'), 'herald_alarm_active', { alarm, queue });

  it('a dead apns-pusher while jobs flow: "no consumer" fires after its delay, reaches the webhook, and clears on restart', async () => {
    const d: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [d]);
    let flowing = true;
    let published = 0;
    const flow = (async () => {
      while (flowing) {
        await sys.client.publishPushJob(job({ userId: d.userId }));
        published++;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    try {
      await waitFor('pushes flowing', async () => (await delivered(sys.sandbox, { token: d.token })).length >= 3);
      expect((await monitorStatus(sys.service('monitor'), sys.operatorKey)).alarms).toEqual([]);

      const fault = Date.now();
      await sys.service('apns-pusher').stop('SIGTERM');
      const stoppedAfter = secondsBetween(fault, Date.now());
      const fired = await hook.waitFor({ alarm: 'no-consumer', queue: Queues.apnsSend, state: 'firing' }, fault);
      const firedAfter = secondsBetween(fault, fired.receivedAt);
      record('no-consumer (apns-pusher stopped)', { firedAfterS: firedAfter, configuredDelayS: NO_CONSUMER_FOR_MS / 1000, pusherExitedAfterS: stoppedAfter });
      expect(firedAfter).toBeGreaterThanOrEqual(NO_CONSUMER_FOR_MS / 1000);
      expect(firedAfter).toBeLessThanOrEqual(NO_CONSUMER_FOR_MS / 1000 + STATS_LAG_S + stoppedAfter + 3);
      expect(String(fired.body['text'])).toMatch(/FIRING.*no-consumer.*push\.apns\.send/);
      expect(await alarmMetric('no-consumer', Queues.apnsSend)).toBe(1);
      expect((await monitorStatus(sys.service('monitor'), sys.operatorKey)).alarms).toContainEqual(expect.objectContaining({ alarm: 'no-consumer', queue: Queues.apnsSend }));
      // The alarm uses live counts; the management API's statistics (which `herald status`
      // computes from when the monitor is away) catch up within their collection interval.
      await waitFor('the management API to show the stalled queue', async () => {
        const q = await queueInfo(sys.vhost.name, Queues.apnsSend);
        return q !== undefined && q.messages > 0 && q.consumers === 0;
      }, { timeoutMs: (STATS_LAG_S + 5) * 1000 });

      // `herald status` shows it, from the monitor, and computed locally when the monitor cannot be reached.
      const viaMonitor = JSON.parse(await herald({ MONITOR_URL: monitorUrl(sys.service('monitor')), HERALD_OPERATOR_KEY: sys.operatorKey }, '--json')) as { source: string; alarms: unknown[]; queues: unknown[] };
      expect(viaMonitor.source).toBe('monitor');
      expect(viaMonitor.alarms).toContainEqual(expect.objectContaining({ alarm: 'no-consumer', queue: Queues.apnsSend }));
      expect(viaMonitor.queues).toContainEqual(expect.objectContaining({ name: Queues.apnsSend, consumers: 0 }));
      const local = JSON.parse(await herald({ MONITOR_URL: 'http://127.0.0.1:9' }, '--json')) as { source: string; alarms: unknown[] };
      expect(local.source).toBe('local');
      expect(local.alarms).toContainEqual(expect.objectContaining({ alarm: 'no-consumer', queue: Queues.apnsSend }));
      // A key the monitor refuses is said to be refused (exit 1), not taken for a monitor that is away.
      const refused = await runHerald({ ...sys.env, MONITOR_URL: monitorUrl(sys.service('monitor')), HERALD_OPERATOR_KEY: 'hko_000000000000_revoked' }, 'status');
      expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/^herald: the monitor at http:\S+ refused HERALD_OPERATOR_KEY \(HTTP 401\)/)]);
      const table = await herald({ MONITOR_URL: monitorUrl(sys.service('monitor')), HERALD_OPERATOR_KEY: sys.operatorKey });
      expect(table).toMatch(/QUEUE\s+DEPTH\s+READY\s+UNACKED\s+CONSUMERS/);
      expect(table).toMatch(/active alarm\(s\):[\s\S]*no-consumer\s+push\.apns\.send/);

      const restart = Date.now();
      await sys.service('apns-pusher').start();
      const resolved = await hook.waitFor({ alarm: 'no-consumer', queue: Queues.apnsSend, state: 'resolved' }, restart);
      record('no-consumer (apns-pusher stopped)', { resolvedAfterS: secondsBetween(restart, resolved.receivedAt), configuredDelayS: NO_CONSUMER_FOR_MS / 1000 });
      expect(String(resolved.body['text'])).toMatch(/RESOLVED/);
      expect(await alarmMetric('no-consumer', Queues.apnsSend)).toBe(0);
      expect(await metric(sys.service('monitor'), 'herald_alarms_raised_total', { alarm: 'no-consumer', queue: Queues.apnsSend })).toBe(1);
    } finally {
      flowing = false;
      await flow;
    }
    // Nothing was lost while the pusher was away: every job published reaches the device (within
    // a ledger lease, LEDGER_LEASE_MS = 30 s, should a push claimed by the stopped pusher wait for it).
    await waitFor('every push delivered', async () => (await delivered(sys.sandbox, { token: d.token })).length >= published, { timeoutMs: 45_000 });
  });

  it('a backlog on push.fcm.send under a tight rate limit: "backlog" and "drain-time" fire, and clear once it drains', async () => {
    const d: Device = { userId: uniqueUser(), platform: 'fcm', token: fcmToken() };
    await registerDevices(sys, [d]);
    await sys.database.db.rateLimits.set({ platform: 'fcm' }, FCM_RATE);
    await new Promise((r) => setTimeout(r, 1_500)); // pushers re-read limits every second

    const fault = Date.now();
    const pushesBefore = await metric(sys.service('demuxer'), 'herald_demuxer_device_pushes_total');
    await Promise.all(Array.from({ length: FCM_PUSHES }, () => sys.client.publishPushJob(job({ userId: d.userId }))));
    // The condition starts once the demuxer has queued more than BACKLOG pushes (4/s drain
    // away meanwhile): on a busy machine that can take seconds after publishing.
    await waitFor('the backlog queued', async () => (await metric(sys.service('demuxer'), 'herald_demuxer_device_pushes_total')) - pushesBefore > BACKLOG + 10, {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    const backedUp = Date.now();
    const [backlog, drain] = await Promise.all([
      hook.waitFor({ alarm: 'backlog', queue: Queues.fcmSend, state: 'firing' }, fault),
      hook.waitFor({ alarm: 'drain-time', queue: Queues.fcmSend, state: 'firing' }, fault),
    ]);
    const queuedAfterS = secondsBetween(fault, backedUp);
    record('backlog (150 pushes at 4/s)', { firedAfterS: secondsBetween(fault, backlog.receivedAt), queuedAfterS, configuredDelayS: BACKLOG_FOR_MS / 1000 });
    record('drain-time (150 pushes at 4/s)', { firedAfterS: secondsBetween(fault, drain.receivedAt), queuedAfterS, configuredDelayS: DRAIN_FOR_MS / 1000 });
    for (const fired of [backlog, drain]) {
      expect(secondsBetween(fault, fired.receivedAt)).toBeGreaterThanOrEqual(1);
      expect(secondsBetween(backedUp, fired.receivedAt)).toBeLessThanOrEqual(1 + STATS_LAG_S + 3);
    }
    expect(Number(backlog.body['value'])).toBeGreaterThan(BACKLOG);
    expect(String(drain.body['summary'])).toMatch(/to drain/);
    expect(await alarmMetric('backlog', Queues.fcmSend)).toBe(1);
    expect(await alarmMetric('drain-time', Queues.fcmSend)).toBe(1);
    // Throttled, not dead: the pusher is attached, so this is not the no-consumer case.
    expect((await monitorStatus(sys.service('monitor'), sys.operatorKey)).alarms.map((a) => a.alarm)).not.toContain('no-consumer');

    const lifted = Date.now();
    await sys.database.db.rateLimits.remove({ platform: 'fcm' });
    const [backlogClear, drainClear] = await Promise.all([
      hook.waitFor({ alarm: 'backlog', queue: Queues.fcmSend, state: 'resolved' }, lifted),
      hook.waitFor({ alarm: 'drain-time', queue: Queues.fcmSend, state: 'resolved' }, lifted),
    ]);
    record('backlog (150 pushes at 4/s)', { resolvedAfterS: secondsBetween(lifted, backlogClear.receivedAt), configuredDelayS: BACKLOG_FOR_MS / 1000 });
    record('drain-time (150 pushes at 4/s)', { resolvedAfterS: secondsBetween(lifted, drainClear.receivedAt), configuredDelayS: DRAIN_FOR_MS / 1000 });
    await waitFor('every fcm push delivered', async () => (await delivered(sys.sandbox, { token: d.token })).length === FCM_PUSHES, { timeoutMs: 30_000 });
    expect(await alarmMetric('backlog', Queues.fcmSend)).toBe(0);
  });

  it('a scheduled push nobody releases (the apns-descheduler gone): "scheduled-overdue" fires, and clears once one runs again', async () => {
    // Only a running descheduler counts its failures; with none, stored pushes fell due unseen.
    const d: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [d]);
    await sys.service('apns-descheduler').stop('SIGTERM');
    const dueAt = Date.now() + 3_000;
    await sys.client.publishPushJob(job({ userId: d.userId, deliverAt: { at: new Date(dueAt).toISOString() } }));
    const fired = await hook.waitFor({ alarm: 'scheduled-overdue', queue: 'scheduled.apns', state: 'firing' }, dueAt, 30_000);
    record('scheduled-overdue (apns-descheduler stopped)', { firedAfterS: secondsBetween(dueAt, fired.receivedAt), configuredDelayS: OVERDUE_S });
    expect(secondsBetween(dueAt, fired.receivedAt)).toBeGreaterThanOrEqual(OVERDUE_S);
    expect(String(fired.body['summary'])).toMatch(/scheduled apns pushes are overdue.*apns-descheduler running/);
    expect(await alarmMetric('scheduled-overdue', 'scheduled.apns')).toBe(1);
    expect(await metric(sys.service('monitor'), 'herald_scheduled_overdue_seconds', { platform: 'apns' })).toBeGreaterThan(OVERDUE_S);
    expect(await delivered(sys.sandbox, { token: d.token })).toEqual([]);

    const restarted = Date.now();
    await sys.service('apns-descheduler').start();
    const resolved = await hook.waitFor({ alarm: 'scheduled-overdue', queue: 'scheduled.apns', state: 'resolved' }, restarted, 30_000);
    record('scheduled-overdue (apns-descheduler stopped)', { resolvedAfterS: secondsBetween(restarted, resolved.receivedAt), configuredDelayS: OVERDUE_S });
    await waitFor('the overdue push delivered', async () => (await delivered(sys.sandbox, { token: d.token })).length === 1);
    expect(await alarmMetric('scheduled-overdue', 'scheduled.apns')).toBe(0);
  });

  it('a restarted monitor says resolved an alarm that ended while it was down, and does not say twice one still firing', async () => {
    const d: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [d]);
    await sys.service('apns-pusher').stop('SIGTERM');
    await sys.service('apns-descheduler').stop('SIGTERM');
    const fault = Date.now();
    const dueAt = fault + 3_000;
    await sys.client.publishPushJob(job({ userId: d.userId, deliverAt: { at: new Date(dueAt).toISOString() } }));
    await sys.client.publishPushJob(job({ userId: d.userId }));
    await hook.waitFor({ alarm: 'no-consumer', queue: Queues.apnsSend, state: 'firing' }, fault, 30_000);
    await hook.waitFor({ alarm: 'scheduled-overdue', queue: 'scheduled.apns', state: 'firing' }, fault, 30_000);

    // While the monitor is away the apns-pusher comes back (no-consumer ends); nobody releases the scheduled push.
    await sys.service('monitor').stop('SIGTERM');
    await sys.service('apns-pusher').start();
    await waitFor('the waiting push delivered', async () => (await delivered(sys.sandbox, { token: d.token })).length === 1, { timeoutMs: 30_000 });
    const restarted = Date.now();
    await sys.service('monitor').start();
    const resolved = await hook.waitFor({ alarm: 'no-consumer', queue: Queues.apnsSend, state: 'resolved' }, restarted, 30_000);
    expect(String(resolved.body['text'])).toMatch(/RESOLVED/);
    // The overdue scheduled push still fires here (the new monitor's own alarm), and was announced before: not posted again.
    await waitFor('scheduled-overdue firing in the restarted monitor', async () => (await alarmMetric('scheduled-overdue', 'scheduled.apns')) === 1, { timeoutMs: 30_000 });
    // Rounds after it (each poll's, and the webhook's latency) would have posted it by now.
    await new Promise((r) => setTimeout(r, 6 * POLL_MS));
    const postedSince = hook.posts.filter((p) => p.receivedAt >= restarted).map((p) => `${String(p.body['state'])} ${String(p.body['alarm'])} ${String(p.body['queue'])}`);
    expect(postedSince).toEqual([`resolved no-consumer ${Queues.apnsSend}`]);

    const released = Date.now();
    await sys.service('apns-descheduler').start();
    await hook.waitFor({ alarm: 'scheduled-overdue', queue: 'scheduled.apns', state: 'resolved' }, released, 30_000);
    await waitFor('the scheduled push delivered', async () => (await delivered(sys.sandbox, { token: d.token })).length === 2, { timeoutMs: 30_000 });
  });
});
