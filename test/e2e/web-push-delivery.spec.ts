import { Headers, Queues, parkedQueueFor } from '@herald/contracts';
import { HeraldHeaders } from '@herald/messaging';
import { generateVapidKeys } from '@herald/providers';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apnsToken, fcmToken, job, registerDevices, uniqueUser, type Device } from '../support/fixtures.ts';
import { API_TEST_ENV, admin } from '../support/http-api.ts';
import { createWebSubscription, delivered, sandboxRecords, unsubscribeWeb, webPushes, type WebPushReceived, type WebSubscriptionJson } from '../support/sandbox-client.ts';
import { DEMO_APP, startSystem, type System } from '../support/system.ts';
import { createWebPushApp, rotateWebPushKeys, SANDBOX_WEB_PUSH_HOST, type WebPushApp } from '../support/web-push-apps.ts';

/**
 * Browsers as the third platform, end to end: the demo app has its own VAPID keys (admin API),
 * its browsers subscribe at the sandbox's push service (which verifies VAPID and decrypts), and
 * the web-pusher sends (and releases scheduled web pushes itself).
 */
/** The web-pusher's own pair (WEB_PUSH_VAPID_*), for apps without keys of their own. */
const PROCESS_VAPID = { ...(await generateVapidKeys()), subject: 'mailto:web-pusher@example.com' };

describe('Web Push delivery, end to end', () => {
  let sys: System;
  let site: WebPushApp;
  beforeAll(async () => {
    sys = await startSystem({
      env: {
        ...API_TEST_ENV,
        WEB_PUSH_VAPID_PUBLIC_KEY: PROCESS_VAPID.publicKey,
        WEB_PUSH_VAPID_PRIVATE_KEY: PROCESS_VAPID.privateKey,
        WEB_PUSH_VAPID_SUBJECT: PROCESS_VAPID.subject,
      },
    });
    site = await createWebPushApp(sys, DEMO_APP.id);
  });
  afterAll(async () => {
    await sys?.stop();
  });

  const deviceRow = (token: string) => sys.database.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirst();

  /**
   * A browser subscribes (bound to `serverKey`, as pushManager.subscribe does) and registers through
   * AMQP, naming that key unless `namesKey` is false (the field is optional).
   */
  async function browser(userId: string, serverKey = site.publicKey, namesKey = true, app = DEMO_APP.id): Promise<WebSubscriptionJson> {
    const sub = await createWebSubscription(sys.sandbox, { applicationServerKey: serverKey });
    await registerWeb(sub, userId, app, namesKey ? serverKey : undefined);
    return sub;
  }
  /** Registers a subscription (again: a front end does on every page load) and waits until the registrar applied it. */
  async function registerWeb(sub: WebSubscriptionJson, userId: string, app: string, applicationServerKey?: string): Promise<void> {
    const eventAt = new Date();
    await sys.client.publishRegistration({
      kind: 'register',
      app,
      platform: 'web',
      token: sub.endpoint,
      keys: sub.keys,
      ...(applicationServerKey !== undefined && { applicationServerKey }),
      userId,
      eventAt: eventAt.toISOString(),
    } as Parameters<System['client']['publishRegistration']>[0]);
    await waitFor('the registration applied', async () => (await deviceRow(sub.endpoint))?.last_event_at.getTime() === eventAt.getTime());
  }
  const received = (endpoint: string, n = 1): Promise<WebPushReceived[]> =>
    waitFor(`${n} web push(es) at the push service`, async () => {
      const got = await webPushes(sys.sandbox, endpoint);
      return got.length >= n && got;
    });

  it('one job reaches the iPhone (APNs), the Android phone (FCM) and the browser (Web Push), the browser decrypting what Herald sent', async () => {
    const userId = uniqueUser('three');
    const iphone: Device = { userId, platform: 'apns', token: apnsToken() };
    const android: Device = { userId, platform: 'fcm', token: fcmToken() };
    await registerDevices(sys, [iphone, android]);
    const web = await browser(userId);
    const content = { title: 'Your order shipped', body: 'Parcel 42 is on its way', data: { orderId: '42' } };
    const sent = await sys.client.publishPushJob(job({ userId, content, collapseKey: 'order-42', priority: 'high' }));

    await waitFor('the iPhone got it', async () => (await delivered(sys.sandbox, { token: iphone.token })).length === 1);
    await waitFor('the Android phone got it', async () => (await delivered(sys.sandbox, { token: android.token })).length === 1);
    const [push] = await received(web.endpoint);
    expect(push?.payload).toMatchObject({ ...content, tag: 'order-42', jobId: sent.id });
    expect(push).toMatchObject({ urgency: 'high', topic: 'order-42', vapidKey: site.publicKey, claims: { sub: site.subject, aud: new URL(web.endpoint).origin } });
    expect(push?.ttl).toBeGreaterThan(2_400_000);
  });

  it('a 410 from the push service invalidates the subscription, and the next job skips it', async () => {
    const userId = uniqueUser('gone');
    const phone: Device = { userId, platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [phone]);
    const web = await browser(userId);
    await unsubscribeWeb(sys.sandbox, web.endpoint);

    await sys.client.publishPushJob(job({ userId }));
    const row = await waitFor('the subscription invalidated', async () => {
      const r = await deviceRow(web.endpoint);
      return r?.invalidated_at != null && r;
    });
    expect(row.invalidation_reason).toBe('Gone');
    expect((await sandboxRecords(sys.sandbox, { platform: 'web', token: web.endpoint })).map((r) => r.status)).toEqual([410]);

    await sys.client.publishPushJob(job({ userId }));
    await waitFor('the phone got both jobs', async () => (await delivered(sys.sandbox, { token: phone.token })).length === 2);
    expect(await sandboxRecords(sys.sandbox, { platform: 'web', token: web.endpoint })).toHaveLength(1);
  });

  it('a scheduled web push waits in the store and is released by the web-pusher itself (no web-descheduler), on time', async () => {
    const userId = uniqueUser('later');
    const web = await browser(userId);
    const dueAt = new Date(Date.now() + 4000);
    await sys.client.publishPushJob(job({ userId, deliverAt: { at: dueAt.toISOString() } }));
    await waitFor('the push scheduled', async () => {
      const rows = await sys.database.db.kysely.selectFrom('scheduled_pushes').select('platform').where('platform', '=', 'web').execute();
      return rows.length > 0;
    });
    expect(await webPushes(sys.sandbox, web.endpoint)).toEqual([]);
    const [push] = await received(web.endpoint);
    expect(Date.parse(push?.receivedAt ?? '')).toBeGreaterThanOrEqual(dueAt.getTime() - 50);
    expect([...sys.services.keys()].filter((s) => s.includes('descheduler'))).toEqual(['apns-descheduler', 'fcm-descheduler']);
  });

  it('VAPID keys rotate without a restart: old subscriptions are signed with the previous pair, new ones with the new pair', async () => {
    const userId = uniqueUser('rotate');
    const before = await browser(userId);
    // Registered without applicationServerKey: Herald records the app's key of that moment.
    const unnamed = await browser(userId, site.publicKey, false);
    expect((await deviceRow(unnamed.endpoint))?.web_vapid_key).toBe(site.publicKey);
    const newKey = await rotateWebPushKeys(sys, DEMO_APP.id);
    const after = await browser(userId, newKey);
    await sys.client.publishPushJob(job({ userId }));
    const [old] = await received(before.endpoint);
    const [oldUnnamed] = await received(unnamed.endpoint);
    const [fresh] = await received(after.endpoint);
    expect(old?.vapidKey).toBe(site.publicKey);
    expect(oldUnnamed?.vapidKey).toBe(site.publicKey);
    expect(fresh?.vapidKey).toBe(newKey);
    site = { ...site, publicKey: newKey };
  });

  // Before: signed with the app's new key, every push to them was refused (403, parked VapidKeyMismatch), or parked "rotated twice".
  it("an app given its own VAPID keys goes on signing the subscriptions it had with the web-pusher's pair they were made with; vapid generate says so", async () => {
    const app = 'late-keys';
    expect((await admin(sys, 'POST', '/admin/apps', { id: app })).status).toBe(201);
    expect((await admin(sys, 'PATCH', `/admin/apps/${app}/web-push`, { hosts: [SANDBOX_WEB_PUSH_HOST] })).status).toBe(200);
    const userId = uniqueUser('late');
    // The front end subscribed with the web-pusher's public key (the app had none), naming it or not.
    const unnamed = await browser(userId, PROCESS_VAPID.publicKey, false, app);
    const named = await browser(userId, PROCESS_VAPID.publicKey, true, app);
    expect((await deviceRow(unnamed.endpoint))?.web_vapid_key).toBeNull();
    await sys.client.publishPushJob(job({ app, userId }));
    await received(unnamed.endpoint);
    await received(named.endpoint);

    const generated = await admin(sys, 'POST', `/admin/apps/${app}/vapid`, { subject: 'mailto:ops@example.com' });
    expect(generated).toMatchObject({ status: 201, body: { notices: [expect.stringMatching(/^existing subscriptions of app "late-keys" keep the key they were made with/)] } });
    const own = (generated.body['vapid'] as { publicKey: string }).publicKey;
    // The page loads again and re-registers its subscription, still without naming the key; a new browser subscribes with the app's key.
    await registerWeb(unnamed, userId, app);
    const fresh = await browser(userId, own, false, app);
    expect((await deviceRow(fresh.endpoint))?.web_vapid_key).toBe(own);
    await sys.client.publishPushJob(job({ app, userId }));
    const [, again] = await received(unnamed.endpoint, 2);
    const [, namedAgain] = await received(named.endpoint, 2);
    const [first] = await received(fresh.endpoint);
    expect([again, namedAgain, first].map((p) => [p?.vapidKey, p?.claims.sub])).toEqual([
      [PROCESS_VAPID.publicKey, PROCESS_VAPID.subject],
      [PROCESS_VAPID.publicKey, PROCESS_VAPID.subject],
      [own, 'mailto:ops@example.com'],
    ]);
  });

  it("a push service taken off the app's allow-list gets no more pushes: the subscriptions it had are parked push-service-not-allowed, not sent", async () => {
    // Before, the list was read only when a browser subscribed: its stored subscriptions went on receiving signed POSTs.
    const app = 'narrowed';
    const narrowed = await createWebPushApp(sys, app);
    const userId = uniqueUser('narrowed');
    const sub = await browser(userId, narrowed.publicKey, true, app);
    await sys.client.publishPushJob(job({ app, userId }));
    await received(sub.endpoint);
    expect((await admin(sys, 'PATCH', `/admin/apps/${app}/web-push`, { hosts: ['fcm.googleapis.com'] })).status).toBe(200);
    const sent = await sys.client.publishPushJob(job({ app, userId }));
    const parked = await waitFor('the push parked', async () => (await peekMessages(sys.vhost.name, parkedQueueFor(Queues.webSend), 1000)).find((m) => m.payload.includes(sent.id)));
    expect(parked.properties.headers?.[HeraldHeaders.parkedCode]).toBe('push-service-not-allowed');
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toMatch(/^the push service host "127\.0\.0\.1" is not on the app's allow-list \(fcm\.googleapis\.com\)/);
    expect(await webPushes(sys.sandbox, sub.endpoint)).toHaveLength(1);
  });

  it('a job over Web Push\'s size limit for an app with VAPID keys: the client library (which does not know the app) publishes it, the demuxer parks it', async () => {
    const userId = uniqueUser('big');
    await browser(userId);
    const sent = await sys.client.publishPushJob(job({ userId, content: { title: 'big', data: { blob: 'x'.repeat(3900) } } }));
    const parked = await waitFor('the job parked', async () => (await peekMessages(sys.vhost.name, parkedQueueFor(Queues.jobs), 1000)).find((m) => m.payload.includes(sent.id)));
    expect(parked.properties.headers?.['x-herald-parked-code']).toBe('payload-too-large');
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toMatch(/^content: Web Push: payload is 40\d\d bytes; Web Push allows 3993 bytes/);
  });

  it('nothing parked on push.web.send along the way (but the pushes to a push service taken off its app\'s list)', async () => {
    expect((await peekMessages(sys.vhost.name, 'push.web.send.parked')).filter((m) => !m.payload.includes('"app":"narrowed"'))).toEqual([]);
  });
});
