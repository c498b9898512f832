import { randomUUID } from 'node:crypto';
import { createAppCredentialStore, createSecretBox } from '@herald/db';
import { Headers, Queues, parkedQueueFor } from '@herald/contracts';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueUser } from '../support/fixtures.ts';
import { API_TEST_ENV, admin, call, teamKey } from '../support/http-api.ts';
import { metric } from '../support/metrics.ts';
import { startSystem, type System } from '../support/system.ts';
import { browserSubscription, createWebPushApp, rotateWebPushKeys, type WebPushApp } from '../support/web-push-apps.ts';

/** Browser subscriptions through every door: the HTTP API, AMQP (the registrar); the apps' VAPID keys through the admin API. */
describe('Web Push doors: browser subscriptions and VAPID keys', () => {
  let sys: System;
  let site: WebPushApp;
  let key: string;

  beforeAll(async () => {
    sys = await startSystem({ env: API_TEST_ENV, only: ['api', 'registrar'] });
    site = await createWebPushApp(sys, 'site');
    key = await teamKey(sys, 'web-team', ['site']);
  });
  afterAll(async () => {
    await sys?.stop();
  });

  const deviceRow = (token: string) => sys.database.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirst();
  const stored = (token: string) => waitFor(`device ${token}`, async () => (await deviceRow(token)) ?? false);

  it('registers a browser subscription through the HTTP API (202) and stores its endpoint, keys and server key', async () => {
    const subscription = browserSubscription();
    const userId = uniqueUser('web');
    const r = await call(sys, 'POST', '/v1/devices', { key, body: { app: 'site', platform: 'web', userId, subscription, applicationServerKey: site.publicKey } });
    expect(r).toMatchObject({ status: 202, body: { accepted: true } });
    expect(await stored(subscription.endpoint)).toMatchObject({
      platform: 'web',
      user_id: userId,
      web_p256dh: subscription.keys.p256dh,
      web_auth: subscription.keys.auth,
      web_vapid_key: site.publicKey,
      invalidated_at: null,
    });
    // Unregister by endpoint.
    expect((await call(sys, 'DELETE', '/v1/devices', { key, body: { app: 'site', platform: 'web', token: subscription.endpoint } })).status).toBe(202);
    await waitFor('unregistered', async () => (await deviceRow(subscription.endpoint))?.invalidation_reason === 'unregistered');
  });

  it('refuses a bad subscription at the API with a 400 naming the field (and the host), storing nothing', async () => {
    const sub = browserSubscription();
    const plain = await call<{ error: { issues: Array<{ path: string; message: string }> } }>(sys, 'POST', '/v1/devices', {
      key,
      body: { app: 'site', platform: 'web', userId: 'u', subscription: { ...sub, endpoint: 'http://127.0.0.1/wp/1' } },
    });
    expect(plain.status).toBe(400);
    expect(plain.body.error.issues).toEqual([{ path: 'subscription.endpoint', message: 'not a Web Push endpoint: expected an https URL, got http' }]);

    const badKeys = await call<{ error: { issues: Array<{ path: string }> } }>(sys, 'POST', '/v1/devices', {
      key,
      body: { app: 'site', platform: 'web', userId: 'u', token: sub.endpoint, keys: { p256dh: sub.keys.p256dh, auth: 'short' } },
    });
    expect([badKeys.status, badKeys.body.error.issues.map((i) => i.path)]).toEqual([400, ['keys.auth']]);

    const foreign = 'https://push.not-allowed.example/wp/1';
    const host = await call<{ error: { message: string; issues: Array<{ path: string; message: string }> } }>(sys, 'POST', '/v1/devices', {
      key,
      body: { app: 'site', platform: 'web', userId: 'u', token: foreign, keys: sub.keys },
    });
    expect(host.status).toBe(400);
    expect(host.body.error.issues).toEqual([{ path: 'token', message: expect.stringContaining('"push.not-allowed.example" is not on the app\'s allow-list (127.0.0.1)') as unknown }]);
    expect(await deviceRow(foreign)).toBeUndefined();
  });

  // Registered without applicationServerKey: the app's current key is recorded, so a rotation keeps it working.
  it('registers through AMQP, and the registrar parks a subscription on a host the app does not allow, with the reason, counted', async () => {
    const good = browserSubscription();
    const userId = uniqueUser('amqp');
    await sys.client.publishRegistration({ kind: 'register', app: 'site', platform: 'web', token: good.endpoint, keys: good.keys, userId, eventAt: new Date().toISOString() });
    expect(await stored(good.endpoint)).toMatchObject({ user_id: userId, web_p256dh: good.keys.p256dh, web_auth: good.keys.auth, web_vapid_key: site.publicKey });

    // The default list (Chrome's, Firefox's, Safari's push services) does not hold for this app: its list is 127.0.0.1.
    const chrome = browserSubscription('https://fcm.googleapis.com/fcm/send/abc:APA91b-test');
    await sys.client.publishRegistration({ kind: 'register', app: 'site', platform: 'web', token: chrome.endpoint, keys: chrome.keys, userId, eventAt: new Date().toISOString() });
    const parked = await waitFor('parked registration', async () =>
      (await peekMessages(sys.vhost.name, parkedQueueFor(Queues.registrations), 100)).find((m) => m.payload.includes(chrome.endpoint)),
    );
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toMatch(/^token: the push service host "fcm.googleapis.com" is not on the app's allow-list \(127\.0\.0\.1\)/);
    expect(await metric(sys.service('registrar'), 'herald_messages_parked_total', { queue: Queues.registrations, code: 'push-service-not-allowed' })).toBe(1);
    expect(await deviceRow(chrome.endpoint)).toBeUndefined();
  });

  // The web-pusher's own WEB_PUSH_VAPID_* pair, which no door knows, signs what an app's browsers
  // subscribed before it had keys of its own: their registrations name that key, and are taken.
  it("takes an applicationServerKey that is not one of the app's keys, at the API and through the registrar", async () => {
    const other = browserSubscription().keys.p256dh; // a P-256 point: a well-formed key, not the app's
    const sub = browserSubscription();
    expect((await call(sys, 'POST', '/v1/devices', { key, body: { app: 'site', platform: 'web', userId: 'u', subscription: sub, applicationServerKey: other } })).status).toBe(202);
    await waitFor('the subscription stored', async () => (await stored(sub.endpoint)) !== undefined);
    expect(await stored(sub.endpoint)).toMatchObject({ web_vapid_key: other });
    // The app's own key is taken too.
    const own = browserSubscription();
    expect((await call(sys, 'POST', '/v1/devices', { key, body: { app: 'site', platform: 'web', userId: 'u', subscription: own, applicationServerKey: site.publicKey } })).status).toBe(202);
    await waitFor('the subscription stored', async () => (await stored(own.endpoint)) !== undefined);
    expect(await stored(own.endpoint)).toMatchObject({ web_vapid_key: site.publicKey });
  });

  it('generates and rotates VAPID keys through the admin API; the team route reads the current public key; the private keys stay sealed', async () => {
    const team = await call(sys, 'GET', '/v1/web-push/vapid-public-key', { key });
    expect(team).toMatchObject({ status: 200, body: { app: 'site', publicKey: site.publicKey, subject: 'mailto:ops@example.com' } });
    expect((await admin(sys, 'POST', '/admin/apps/site/vapid', { subject: 'mailto:ops@example.com' })).body).toMatchObject({ error: { code: 'vapid-exists' } });
    const badSubject = await admin(sys, 'POST', '/admin/apps/site/vapid/rotate', { subject: 'http://example.com' });
    expect(badSubject.status).toBe(400);
    expect(badSubject.body).toMatchObject({ error: { issues: [{ path: 'subject' }] } });
    // Apple's push service answers 403 BadJwtToken to a subject it cannot reach (and Herald would ban the app): refused at the door.
    for (const subject of ['https://localhost', 'mailto:ops@localhost']) {
      const local = await admin(sys, 'POST', '/admin/apps/site/vapid/rotate', { subject });
      expect([subject, local]).toMatchObject([subject, { status: 400, body: { error: { issues: [{ path: 'subject', message: expect.stringMatching(/can reach .*"localhost" is a local name/) as unknown }] } } }]);
    }

    const before = (await sys.database.db.apps.get('site'))?.credentialsVersion ?? 0;
    const rotated = await rotateWebPushKeys(sys, 'site');
    expect(rotated).not.toBe(site.publicKey);
    const view = await admin(sys, 'GET', '/admin/apps/site/web-push');
    expect(view.body).toMatchObject({ vapid: { publicKey: rotated, previousPublicKey: site.publicKey }, hosts: ['127.0.0.1'], defaultHosts: false, credentialsVersion: before + 1 });
    expect((await call(sys, 'GET', '/v1/web-push/vapid-public-key', { key })).body).toMatchObject({ publicKey: rotated });

    const stored = await createAppCredentialStore(sys.database.db.kysely, createSecretBox(API_TEST_ENV.HERALD_SECRET_KEY)).readWeb('site');
    expect(stored).toMatchObject({ current: { publicKey: rotated }, previous: { publicKey: site.publicKey } });
    const answers = JSON.stringify([view.body, (await admin(sys, 'GET', '/admin/apps')).body]);
    expect(answers).not.toContain(stored?.current.privateKey);
    expect(answers).not.toContain(stored?.previous?.privateKey);

    const audit = await sys.database.db.audit.list({ action: 'app.rotate-vapid' });
    expect(audit.map((e) => [e.target, e.outcome])).toContainEqual(['site', 'ok']);
    expect(JSON.stringify(audit)).not.toContain(stored?.current.privateKey);
  });

  it('refuses an oversize web payload at the API with a 400 naming the field, only for an app with VAPID keys', async () => {
    type Refusal = { error: { issues: Array<{ path: string; message: string }> } };
    // About 4,000 bytes of JSON: within APNs' and FCM's 4,096, beyond Web Push's 3,993.
    const content = { title: 'big', data: { blob: 'x'.repeat(3900) } };
    const webLimit = expect.stringMatching(/^Web Push: payload is 4\d{3} bytes; Web Push allows 3993 bytes/) as unknown;
    const single = await call<Refusal>(sys, 'POST', '/v1/jobs', { key, body: { id: randomUUID(), app: 'site', userId: 'u', category: 'c', content } });
    expect(single.status).toBe(400);
    expect(single.body.error.issues).toEqual([{ path: 'content', message: webLimit }]);
    const override = { title: 'big', web: { payload: { blob: 'x'.repeat(4000) } } };
    const batch = await call<Refusal>(sys, 'POST', '/v1/jobs:batch', {
      key,
      body: { jobs: [{ id: randomUUID(), app: 'site', userId: 'u', category: 'c', content: { title: 'fine' } }, { id: randomUUID(), app: 'site', userId: 'u', category: 'c', content: override }] },
    });
    expect(batch.status).toBe(400);
    expect(batch.body.error.issues).toEqual([{ path: 'jobs.1.content.web.payload', message: webLimit }]);

    // The same job to an app without VAPID keys (no browsers): APNs and FCM take it.
    await admin(sys, 'POST', '/admin/apps', { id: 'phones' });
    const phonesKey = await teamKey(sys, 'phones-team', ['phones']);
    const id = randomUUID();
    const accepted = await call(sys, 'POST', '/v1/jobs', { key: phonesKey, body: { id, app: 'phones', userId: 'u', category: 'c', content } });
    expect(accepted).toMatchObject({ status: 202, body: { id, duplicate: false } });
  });

  it('documents the web platform and the VAPID routes in /openapi.json', async () => {
    const doc = (await call(sys, 'GET', '/openapi.json')).body as { paths: Record<string, object>; components: { schemas: Record<string, { properties?: Record<string, unknown> }> } };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/web-push/vapid-public-key', '/admin/apps/{id}/web-push', '/admin/apps/{id}/vapid', '/admin/apps/{id}/vapid/rotate']));
    expect(Object.keys(doc.components.schemas['DeviceRegister']?.properties ?? {})).toEqual(expect.arrayContaining(['subscription', 'keys', 'applicationServerKey']));
    expect(doc.components.schemas['DeviceRegister']?.properties?.['platform']).toMatchObject({ enum: ['apns', 'fcm', 'web'] });
  });

  it('answers 404 naming the problem when the app has no VAPID keys', async () => {
    await admin(sys, 'POST', '/admin/apps', { id: 'nokeys' });
    const other = await teamKey(sys, 'other-team', ['nokeys']);
    const r = await call(sys, 'GET', '/v1/web-push/vapid-public-key', { key: other });
    expect(r).toMatchObject({ status: 404, body: { error: { code: 'no-vapid', message: expect.stringContaining('app "nokeys" has no VAPID keys yet') as unknown } } });
  });
});
