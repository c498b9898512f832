import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PushSubscriptionJson } from '@herald/contracts';
import type { WebPushPayload } from '@herald/providers';
import { waitFor } from '@herald/testing';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS } from '../support/chromium.ts';
import { startFakeGcm, type FakeGcm } from '../support/fake-gcm.ts';
import { job, uniqueUser } from '../support/fixtures.ts';
import { API_TEST_ENV, call, teamKey } from '../support/http-api.ts';
import { createWebSubscription, webPushes } from '../support/sandbox-client.ts';
import { startSystem, type System } from '../support/system.ts';
import { createWebPushApp, SANDBOX_WEB_PUSH_HOST } from '../support/web-push-apps.ts';

const SCREENSHOT = 'test-results/web-push-demo.png';
const APP = 'webdemo';
/** Chromium builds a subscription's endpoint from a hard-wired Google prefix (staging when GCM is moved). */
const GOOGLE_PUSH_HOSTS = ['fcm.googleapis.com', 'jmt17.google.com'];

/** What the test could and could not drive, printed once at the end (one line each). */
const coverage: string[] = [];

/** The job the third test publishes; its push reaches the page's worker as the sandbox decrypted it. */
const CONTENT = { title: 'Your order shipped', body: 'Parcel 42 is on its way.', tag: 'order-42', clickAction: '/web-demo/?order=42', data: { orderId: '42' } };

/**
 * Herald sends a job to a browser subscribed at the sandbox's push service (which verifies VAPID
 * and decrypts), and returns the payload exactly as the push service received it.
 */
async function pushThroughHerald(sys: System, key: string, vapidKey: string): Promise<WebPushPayload> {
  const browser = await createWebSubscription(sys.sandbox, { applicationServerKey: vapidKey });
  const userId = uniqueUser('web');
  const body = { app: APP, platform: 'web', userId, subscription: browser, applicationServerKey: vapidKey };
  expect(await call(sys, 'POST', '/v1/devices', { key, body })).toMatchObject({ status: 202 });
  await waitFor('the subscription registered', async () => (await sys.database.db.kysely.selectFrom('devices').select('token').where('token', '=', browser.endpoint).executeTakeFirst()) ?? false);
  await sys.client.publishPushJob(job({ app: APP, userId, content: CONTENT }));
  const [received] = await waitFor('the push at the sandbox push service', async () => {
    const pushes = await webPushes(sys.sandbox, browser.endpoint);
    return pushes.length > 0 ? pushes : false;
  });
  return received?.payload as unknown as WebPushPayload;
}

describe('the Web Push demo page and its service worker, in a real headless Chromium', () => {
  let sys: System;
  let key: string;
  let vapidKey: string;
  let fakeGcm: FakeGcm;
  const contexts: BrowserContext[] = [];
  const profiles: string[] = [];
  const pageErrors: string[] = [];
  /** The subscribed page (second test): the third delivers a push to its worker, so the screenshot shows both. */
  let subscribed: { context: BrowserContext; page: Page; origin: string } | undefined;

  async function openDemo(extraArgs: string[], query: Record<string, string>): Promise<{ context: BrowserContext; page: Page; origin: string }> {
    const profile = await mkdtemp(join(tmpdir(), 'herald-chromium-'));
    profiles.push(profile);
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: [...CHROMIUM_ARGS, ...extraArgs],
      headless: true,
      viewport: { width: 1100, height: 900 },
    });
    contexts.push(context);
    const origin = sys.sandbox.settings.control.url;
    await context.grantPermissions(['notifications'], { origin });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.goto(`${origin}/web-demo/?${new URLSearchParams(query)}`);
    await page.waitForSelector('body[data-worker="active"]');
    return { context, page, origin };
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium is missing at ${CHROMIUM}: the demo page test needs Debian's chromium (bash infra/local/test-deps.sh installs it)`);
    }
    sys = await startSystem({ env: API_TEST_ENV, only: ['api', 'registrar', 'demuxer', 'web-pusher'] });
    await createWebPushApp(sys, APP, { hosts: [...GOOGLE_PUSH_HOSTS, SANDBOX_WEB_PUSH_HOST] });
    key = await teamKey(sys, 'web-demo-team', [APP]);
    // The page takes the key as a web app would get it: from Herald's team route.
    const vapid = await call<{ publicKey: string }>(sys, 'GET', `/v1/web-push/vapid-public-key?app=${APP}`, { key });
    expect(vapid.status).toBe(200);
    vapidKey = vapid.body.publicKey;
    fakeGcm = await startFakeGcm();
  });
  afterAll(async () => {
    for (const c of contexts) await c.close();
    for (const p of profiles) await rm(p, { recursive: true, force: true });
    await fakeGcm?.close();
    await sys?.stop();
    for (const line of coverage) console.log(line);
  });

  it('says so on the page when the browser push service never answers (offline, Chromium waits on its GCM check-in for good)', async () => {
    // Port 9 is closed: the same as Google's check-in server from this offline machine, on any machine.
    const { page } = await openDemo(['--gcm-checkin-url=http://127.0.0.1:9/checkin'], { vapidKey, subscribeTimeoutMs: '2000' });
    await page.click('#subscribe');
    await page.waitForSelector('body[data-subscribe="failed"]', { timeout: 10_000 });
    expect(await page.locator('#error').textContent()).toBe("Subscribing failed: no answer from the browser's push service within 2 s");
    expect(await page.locator('#subscription').isHidden()).toBe(true);
    coverage.push('tested: PushManager.subscribe with an unreachable push service (offline it never settles; the page times out and says so)');
  });

  it('subscribes through Chromium’s own GCM client (check-in and registration moved to a fake), and Herald accepts the subscription the page shows', async () => {
    subscribed = await openDemo(fakeGcm.chromiumArgs, { vapidKey, app: APP });
    const { page } = subscribed;
    await page.click('#subscribe');
    await page.waitForSelector('body[data-subscribe="subscribed"]', { timeout: 15_000 });
    const subscription = PushSubscriptionJson.parse(JSON.parse((await page.locator('#subscription').textContent()) ?? ''));
    expect(GOOGLE_PUSH_HOSTS).toContain(new URL(subscription.endpoint).hostname);
    // Chromium registered with the app's VAPID key as the sender (its applicationServerKey).
    expect(fakeGcm.registrations.map((r) => r['sender'])).toContain(vapidKey);

    // What the page tells a web app to send is what Herald's POST /v1/devices takes.
    const userId = uniqueUser('browser');
    const body = { ...(JSON.parse((await page.locator('#register-body').textContent()) ?? '') as Record<string, unknown>), app: APP, userId };
    expect(await call(sys, 'POST', '/v1/devices', { key, body })).toMatchObject({ status: 202 });
    const row = await waitFor('the browser registered', async () => (await sys.database.db.kysely.selectFrom('devices').selectAll().where('token', '=', subscription.endpoint).executeTakeFirst()) ?? false);
    expect(row).toMatchObject({ platform: 'web', user_id: userId, web_p256dh: subscription.keys.p256dh, web_auth: subscription.keys.auth, web_vapid_key: vapidKey });
    coverage.push('tested: PushManager.subscribe in Chromium up to its GCM registration (fake check-in + registration), and registering that subscription with Herald');
    coverage.push('not tested offline: subscribing at a real push service, and a push travelling from a push service to Chromium (Chromium only receives over Google MCS; the endpoint prefix is hard-wired to Google)');
  });

  it('shows a push Herald sends as a notification and lists it on the page (delivered to the worker over DevTools)', async () => {
    const { context, page, origin } = subscribed ?? (await openDemo([], { vapidKey }));
    const cdp = await context.newCDPSession(page);
    const registrations: Array<{ registrationId: string; scopeURL: string; isDeleted: boolean }> = [];
    cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => registrations.push(...e.registrations));
    await cdp.send('ServiceWorker.enable');
    const registration = await waitFor('the worker registration', async () => registrations.find((r) => r.scopeURL === `${origin}/web-demo/` && !r.isDeleted) ?? false);

    const payload = await pushThroughHerald(sys, key, vapidKey);
    expect(payload).toMatchObject({ title: CONTENT.title, body: CONTENT.body, tag: CONTENT.tag, url: CONTENT.clickAction, data: CONTENT.data });
    await cdp.send('ServiceWorker.deliverPushMessage', { origin, registrationId: registration.registrationId, data: JSON.stringify(payload) });

    const item = page.locator('#pushes li.push').first();
    await item.waitFor({ state: 'visible', timeout: 10_000 });
    expect(await item.locator('.title').textContent()).toBe(payload.title);
    expect(await item.locator('.body').textContent()).toBe(payload.body);
    expect(await item.getAttribute('data-push-id')).toBe(payload.pushId);
    // What the worker showed (runs in the page; a string, as the tests are typed without the DOM).
    const shown = await page.evaluate<unknown>(
      '(async () => (await (await navigator.serviceWorker.ready).getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data })))()',
    );
    expect(shown).toEqual([
      { title: payload.title, body: payload.body, tag: payload.tag, data: { data: payload.data, url: payload.url, jobId: payload.jobId, pushId: payload.pushId } },
    ]);
    await mkdir('test-results', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(pageErrors).toEqual([]);
    coverage.push('tested: a job through Herald (demuxer, web-pusher) to the sandbox push service, its decrypted payload delivered to the worker -> showNotification with title, body, tag, data, and the page list');
    coverage.push('not tested: notificationclick (headless Chromium cannot click a notification)');
  });
});
