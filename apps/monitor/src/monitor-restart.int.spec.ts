import { existsSync, readFileSync } from 'node:fs';
import { createAnnouncedAlarmStore, type AnnouncedAlarm } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, workQueueTopology, type Broker } from '@herald/messaging';
import { createManagementApi, thresholdConfig, type AlarmTransition, type ThresholdConfig } from '@herald/monitoring';
import { Registry, startOpsServer } from '@herald/runtime';
import { createTestDatabase, createTestVhost, MANAGEMENT_API, queueInfo, waitFor, type TestDatabase, type TestVhost } from '@herald/testing';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { announcedAtStart } from './alarm-announcer.ts';
import { dashboardRoutes } from './dashboard-routes.ts';
import { History } from './history.ts';
import { LOGIN_PAGE } from './login-page.ts';
import { createMonitorMetrics } from './monitor-metrics.ts';
import { createOperatorGate } from './operator-gate.ts';
import { startQueueMonitor, type QueueMonitor } from './queue-monitor.ts';

const logger = createLogger({ service: 'monitor-restart-spec', level: 'silent' });
const SEND = 'push.apns.send';
const QUIET = 'push.fcm.send';
const WAITING = 5;
const KEY = `hko_${'0'.repeat(12)}_${'r'.repeat(43)}`;
/** The alarms lease as the monitor before the restart held it (only its holder writes announced_alarms). */
const LEASE = { name: 'monitor-alarms', holder: 'the-monitor-before-the-restart' };
const PAGE = readFileSync(new URL('./dashboard.html', import.meta.url), 'utf8');
/** Debian's chromium, headless, as test/support/chromium.ts drives it for the e2e tests (a project this one may not import). */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;
let browser: Browser;
beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: the dashboard's page is checked in it (bash infra/local/test-deps.sh installs it)`);
  t = await createTestDatabase('monitorrestart');
  vhost = await createTestVhost('monitorrestart');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'monitor-restart-spec' });
  await broker.applyTopology(workQueueTopology(SEND, 'restart.apns'));
  await broker.applyTopology(workQueueTopology(QUIET, 'restart.fcm'));
  // The apns-pusher died hours ago: its messages wait, nobody consumes them.
  for (let i = 0; i < WAITING; i++) await broker.publisher.publish({ exchange: '', routingKey: SEND, body: Buffer.from(`{"n":${i}}`), messageId: `m${i}` });
  await waitFor('the management API to count the waiting messages', async () => (await queueInfo(vhost.name, SEND))?.messages === WAITING, { timeoutMs: 30_000 });
  await t.db.kysely.insertInto('leases').values({ name: LEASE.name, holder: LEASE.holder, expires_at: new Date(Date.now() + 3_600_000) }).execute();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
});
afterAll(async () => {
  await browser?.close();
  await broker?.close();
  await vhost?.delete();
  await t?.drop();
});

/** A monitor as main.ts starts one, over `vhost`'s queues through the real management API. */
function startMonitor(opts: { on?: TestVhost; announced?: readonly AnnouncedAlarm[]; thresholds?: ThresholdConfig } = {}) {
  const said: AlarmTransition[] = [];
  const monitor = startQueueMonitor({
    api: createManagementApi(MANAGEMENT_API),
    vhost: (opts.on ?? vhost).name,
    pollMs: 250,
    thresholds: opts.thresholds ?? thresholdConfig(),
    history: new History(60_000),
    metrics: createMonitorMetrics(new Registry()),
    logger,
    ...(opts.announced !== undefined && { announced: opts.announced }),
    announce: (transition) => void said.push(transition),
  });
  return { monitor, said };
}

const firstPoll = (monitor: QueueMonitor) => waitFor('the first poll', () => monitor.state().at !== null);

/** The dashboard of `monitor` open in Chromium (with an operator key), for `look`. */
async function onDashboard(monitor: QueueMonitor, look: (page: Page) => Promise<void>): Promise<void> {
  const routes = dashboardRoutes({
    page: PAGE,
    loginPage: LOGIN_PAGE,
    gate: createOperatorGate({ findOperatorByKey: async (key) => (key === KEY ? { id: 'op1', name: 'ann' } : undefined) }, 5_000, logger),
    audit: t.db.audit,
    monitor,
    history: new History(60_000),
    scheduled: () => ({ at: null, hours: [] }),
    fanouts: async () => [],
    amqpUrl: vhost.amqpUrl,
    logger,
  });
  const server = await startOpsServer({ port: 0, registry: new Registry(), healthy: () => true, ready: () => ({ ready: true, problems: [] }), routes: () => routes });
  const context = await browser.newContext({ extraHTTPHeaders: { authorization: `Bearer ${KEY}` } });
  try {
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`http://127.0.0.1:${server.port}/`);
    await page.waitForSelector('body[data-ready="true"]');
    await look(page);
    expect(errors).toEqual([]);
  } finally {
    await context.close();
    await server.close();
  }
}

// The apns-pusher dead since 02:00, the monitor restarted at 04:58: at 04:59 the dashboard said
// "All clear", then "firing for 1m" and "oldest (est.) 1m" for three-hour-old messages.
describe('a monitor that restarts during an outage', () => {
  it('shows an alarm said firing before as firing from its first poll, with its first times, and says it is still warming up', async () => {
    const firedAt = Date.now() - 3 * 3_600_000;
    const since = firedAt - 30_000;
    const store = createAnnouncedAlarmStore(t.db.kysely, LEASE);
    await store.fired({ alarm: 'no-consumer', queue: SEND, summary: `${SEND} has ${WAITING} messages waiting and no consumer`, value: WAITING, threshold: 0, since, firedAt });

    const { monitor, said } = startMonitor({ announced: await announcedAtStart(store, logger, 5_000) });
    try {
      await firstPoll(monitor);
      const state = monitor.state();
      const firing = expect.objectContaining({ alarm: 'no-consumer', queue: SEND, value: WAITING, since, firedAt }) as unknown;
      expect(state.alarms).toEqual([firing]);
      expect(said).toEqual([expect.objectContaining({ state: 'firing', alarm: firing })]);
      // Other conditions may have held before too: none firing is not all clear for the longest delay (oldest-message's age bound and delay, 6 min).
      expect(state).toMatchObject({ warmingUp: true, watchingSince: state.at, warmingUpUntil: new Date(Date.parse(state.at ?? '') + 360_000).toISOString() });
      // Its messages were there before its first poll: their age is at least the time since.
      expect(state.queues.find((q) => q.name === SEND)).toMatchObject({ messages: WAITING, oldestAgeIsLowerBound: true });

      await onDashboard(monitor, async (page) => {
        const alarm = page.locator(`.alarm[data-alarm="no-consumer"][data-queue="${SEND}"]`);
        expect(await alarm.locator('.for').textContent()).toMatch(/^firing for 3h 0m$/);
        const watching = `watching since ${(state.watchingSince ?? '').slice(11, 19)}Z, alarms may still appear`;
        expect(await page.locator('#alarms').textContent()).toContain(watching);
        expect(await page.locator(`.queue[data-queue="${SEND}"] .stats`).textContent()).toMatch(/oldest \(est\.\)≥ \d+s \(monitor restarted\)/);
      });
    } finally {
      await monitor.stop();
      await store.resolved({ alarm: 'no-consumer', queue: SEND });
    }
  });

  it('an alarm said firing before whose condition has ended is not shown; a queue seen empty since the start has its age as an estimate', async () => {
    const { monitor, said } = startMonitor({ announced: [{ alarm: 'backlog', queue: SEND, summary: 'was deep', value: 20_000, threshold: 10_000, since: 0, firedAt: 60_000 }] });
    try {
      await firstPoll(monitor);
      expect(monitor.state().alarms).toEqual([]);
      expect(said).toEqual([]);
      await broker.publisher.publish({ exchange: '', routingKey: QUIET, body: Buffer.from('{}'), messageId: 'later' });
      const quiet = await waitFor('the new message seen', () => monitor.state().queues.find((q) => q.name === QUIET && q.messages === 1), { timeoutMs: 30_000 });
      expect(quiet.oldestAgeIsLowerBound).toBe(false);
    } finally {
      await monitor.stop();
    }
  });

  it('starts, and says so, when the announced alarms cannot be read (the database down)', async () => {
    const warned = vi.spyOn(logger, 'warn');
    const unreadable = createAnnouncedAlarmStore(t.db.kysely.withSchema('herald_no_such_schema'), LEASE);
    expect(await announcedAtStart(unreadable, logger, 5_000)).toEqual([]);
    expect(warned).toHaveBeenCalledWith(expect.anything(), expect.stringMatching(/^could not read the alarms announced before this start/));
    warned.mockRestore();
  });

  it('the dashboard does not say all clear until the monitor has watched for its longest alarm delay', async () => {
    const empty = await createTestVhost('monitorwarm');
    const delays = { backlogForMs: 6_000, noConsumerForMs: 6_000, drainForMs: 6_000, stalledForMs: 6_000, parkedWindowMs: 6_000, oldestAgeSeconds: 3, oldestAgeForMs: 3_000 };
    const { monitor } = startMonitor({ on: empty, thresholds: thresholdConfig({ '*': delays }) });
    try {
      await firstPoll(monitor);
      expect(monitor.state()).toMatchObject({ alarms: [], warmingUp: true });
      await onDashboard(monitor, async (page) => {
        expect(await page.locator('#alarms').textContent()).toMatch(/^watching since \d\d:\d\d:\d\dZ, alarms may still appear \(until \d\d:\d\d:\d\dZ\)$/);
        await expect.poll(() => page.locator('#alarms').textContent(), { timeout: 15_000 }).toBe('✓ All clear — no alarm is firing');
      });
      expect(monitor.state().warmingUp).toBe(false);
    } finally {
      await monitor.stop();
      await empty.delete();
    }
  });
});
