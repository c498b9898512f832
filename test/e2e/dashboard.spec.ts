import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Exchanges, Queues, derivePushId, parkedQueueFor } from '@herald/contracts';
import { createFanoutRepository } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, type Broker } from '@herald/messaging';
import { peekMessages, waitFor } from '@herald/testing';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS } from '../support/chromium.ts';
import { apnsToken, fcmToken, job, registerDevices, uniqueUser, type Device } from '../support/fixtures.ts';
import { monitorStatus, monitorUrl } from '../support/monitor-client.ts';
import { startSystem, type System } from '../support/system.ts';

const SCREENSHOT = 'test-results/dashboard.png';
const BACKED_UP = 25;
const BROKEN_ID = 'broken-job-for-the-dashboard';
const THRESHOLDS = { [Queues.jobs]: { noConsumerForMs: 1_000, backlog: 10, backlogForMs: 1_000 }, '*': { parkedWindowMs: 600_000 } };

/** A few pushes scheduled over the next hours, so the scheduled-by-hour chart has something to show. */
async function scheduleSome(sys: System): Promise<void> {
  const devices: Device[] = Array.from({ length: 12 }, (_, i) => ({
    userId: uniqueUser('sched'),
    platform: i % 3 === 0 ? 'fcm' : 'apns',
    token: i % 3 === 0 ? fcmToken() : apnsToken(),
  }));
  await registerDevices(sys, devices);
  const plan: Array<[hours: number, users: number]> = [[1, 12], [2, 5], [3, 9], [5, 3], [8, 7], [13, 10], [20, 4]];
  for (const [hours, users] of plan) {
    const at = new Date(Date.now() + hours * 3_600_000).toISOString();
    await sys.client.publishPushJob(job({ userIds: devices.slice(0, users).map((d) => d.userId), deliverAt: { at } }));
  }
  // A Web Push one, stored as the demuxer stores it (the chart stacks it apart; it left web out).
  const web = derivePushId('dashboard-web-job', 'web-device');
  await sys.database.db.kysely
    .insertInto('scheduled_pushes')
    .values({ platform: 'web', due_at: new Date(Date.now() + 4 * 3_600_000), job_id: 'dashboard-web-job', push_id: web, payload: JSON.stringify({ pushId: web }) })
    .execute();
  await waitFor('scheduled pushes stored', async () => (await sys.database.db.scheduled.countsByHour(undefined, 24)).reduce((a, r) => a + r.count, 0) === 51);
}

describe('the operator dashboard, in a real headless Chromium', () => {
  let sys: System;
  let raw: Broker;
  let browser: Browser | undefined;
  let profile: string | undefined;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium is missing at ${CHROMIUM}: the dashboard test needs Debian's chromium (bash infra/local/test-deps.sh installs it)`);
    }
    sys = await startSystem({ env: { MONITOR_POLL_MS: '500', MONITOR_SCHEDULED_POLL_MS: '1000', MONITOR_THRESHOLDS: JSON.stringify(THRESHOLDS) } });
    raw = await connectBroker({ url: sys.vhost.amqpUrl, logger: createLogger({ service: 'test', level: 'warn', format: 'json' }), connectionName: 'raw' });
    profile = await mkdtemp(join(tmpdir(), 'herald-chromium-'));
  });
  afterAll(async () => {
    await browser?.close();
    if (profile !== undefined) await rm(profile, { recursive: true, force: true });
    await raw?.close();
    await sys?.stop();
  });

  it('asks for an operator key, shows a backed-up queue and its alarm, and a replay click (confirmed past the permanent-rejection refusal) moves a parked message back', async () => {
    await scheduleSome(sys);
    // A job that can never succeed is parked by the demuxer.
    await raw.publisher.publish({ exchange: Exchanges.jobs, routingKey: Queues.jobs, body: Buffer.from('{"id": "broken'), messageId: BROKEN_ID });
    const parkedQueue = parkedQueueFor(Queues.jobs);
    await waitFor('the broken job parked', async () => (await peekMessages(sys.vhost.name, parkedQueue)).some((m) => m.properties.message_id === BROKEN_ID));
    // The demuxer dies; jobs back up in push.jobs.
    await sys.service('demuxer').stop('SIGTERM');
    for (let i = 0; i < BACKED_UP; i++) {
      await sys.client.publishPushJob(job({ userId: uniqueUser() }));
      await new Promise((r) => setTimeout(r, 250)); // a rising line on the chart, not a step
    }
    await waitFor(
      'the monitor to raise no-consumer on push.jobs',
      async () => (await monitorStatus(sys.service('monitor'), sys.operatorKey)).alarms.some((a) => a.alarm === 'no-consumer' && a.queue === Queues.jobs),
      { timeoutMs: 30_000 },
    );

    // A running audience fan-out (recorded as the demuxer records one; with the demuxer down it stays at its first chunk).
    const fanouts = createFanoutRepository(sys.database.db.kysely);
    await fanouts.start({ jobId: 'fanout-on-the-dashboard', app: 'demo', audience: { topic: 'breaking-news' }, job: {}, acceptedAt: new Date(), size: 5000, exact: false });
    await fanouts.recordChunk('fanout-on-the-dashboard', 0, { devices: 1000, targeted: 1000, noDevice: 0, emitted: 1000, outcomes: [], planned: { deviceIds: [], userIds: [], toDevice: [] } });

    const context = await chromium.launchPersistentContext(profile as string, {
      executablePath: CHROMIUM,
      args: [...CHROMIUM_ARGS],
      headless: true,
      viewport: { width: 1440, height: 1100 },
    });
    browser = context.browser() ?? undefined;
    const page = context.pages()[0] ?? (await context.newPage());
    const pageErrors: string[] = [];
    page.on('pageerror', (err) => pageErrors.push(err.message));
    // Without a session the dashboard is a login form (401); a wrong key is refused, the operator key opens it.
    const login = await page.goto(monitorUrl(sys.service('monitor')));
    expect(login?.status()).toBe(401);
    await page.fill('#key', 'hko_not_a_real_key');
    await page.click('button[type="submit"]');
    await expect.poll(() => page.locator('#error').textContent()).toMatch(/unknown or revoked operator key/);
    await page.fill('#key', sys.operatorKey);
    await page.click('button[type="submit"]');
    await page.waitForSelector('body[data-ready="true"]');
    await expect.poll(() => page.locator('#operator').textContent()).toBe('e2e');
    const cookie = (await context.cookies()).find((c) => c.name === 'herald_operator_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });

    const card = page.locator(`.queue[data-queue="${Queues.jobs}"]`);
    await expect.poll(() => card.locator('.depth').getAttribute('data-depth'), { timeout: 15_000 }).toBe(String(BACKED_UP));
    await expect.poll(() => card.getAttribute('class')).toContain('alarmed');
    await expect.poll(() => card.textContent()).toMatch(/0 consumers/);
    const alarm = page.locator(`.alarm[data-alarm="no-consumer"][data-queue="${Queues.jobs}"]`);
    await alarm.waitFor({ state: 'visible' });
    expect(await alarm.textContent()).toMatch(/no consumer/i);
    const replayButton = page.locator(`button.replay[data-replay-id="${BROKEN_ID}"]`);
    await replayButton.waitFor({ state: 'visible', timeout: 15_000 });
    // When it was parked, with its date and zone and how long ago: a time of day alone read as today's.
    expect(await page.locator(`tr[data-parked-id="${BROKEN_ID}"] .when[data-parked]`).textContent()).toMatch(/^parked \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \d+ (s|min) ago$/);
    await expect.poll(() => page.locator('#scheduled rect').count()).toBeGreaterThan(0);
    await expect.poll(() => page.locator('#scheduled rect title').allTextContents()).toContainEqual(expect.stringMatching(/ · web: 1$/));
    expect(await page.locator('#scheduled .legend').textContent()).toContain('Web Push');
    const fanoutRow = page.locator('#fanouts tr[data-fanout="fanout-on-the-dashboard"]');
    await fanoutRow.waitFor({ state: 'visible', timeout: 15_000 });
    expect(await fanoutRow.textContent()).toMatch(/breaking-news[\s\S]*expanding[\s\S]*1,000 \/ ~5,000/); // a topic's size counts members: an estimate of its devices
    await mkdir('test-results', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // The broken job was parked as malformed-json, a permanent rejection: the first answer refuses
    // and says why; the operator confirms, and it is replayed with force.
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.accept();
    });
    await replayButton.click();
    await expect.poll(() => page.locator('#toast').textContent(), { timeout: 15_000 }).toMatch(/Replayed 1 message to push\.jobs/);
    expect(dialogs).toHaveLength(1);
    expect(dialogs[0]).toMatch(/refused to replay 1 permanent rejection.*"malformed-json".*not valid JSON[\s\S]*Replay it anyway\?/);
    // Back in push.jobs (where nobody consumes it now), gone from the parked queue.
    await waitFor('the replayed job back in push.jobs', async () => (await peekMessages(sys.vhost.name, Queues.jobs, 100)).some((m) => m.properties.message_id === BROKEN_ID));
    expect((await peekMessages(sys.vhost.name, parkedQueue)).some((m) => m.properties.message_id === BROKEN_ID)).toBe(false);
    // Both answers are in the audit log under the operator who clicked.
    const audit = await sys.database.db.audit.list({ action: 'parked.replay' });
    expect(audit.map((e) => [e.actor.name, e.actor.kind, e.target, e.request['force'], e.outcome])).toEqual([
      ['e2e', 'operator', parkedQueue, true, 'ok'],
      ['e2e', 'operator', parkedQueue, false, 'refused'],
    ]);
    expect(pageErrors).toEqual([]);
  });
});
