import { randomUUID } from 'node:crypto';
import { Exchanges, Headers, Queues, parkedQueueFor } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker, type Broker } from '@herald/messaging';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apnsToken, fcmToken, job, registerDevices, uniqueUser, type Device, type PhonePlatform } from '../support/fixtures.ts';
import { API_TEST_ENV, call, teamKey } from '../support/http-api.ts';
import { delivered, phoneDeliveries, setPhoneOffline, setPhoneOnline } from '../support/sandbox-client.ts';
import { DEMO_APP, startSystem, type System } from '../support/system.ts';

type ErrorBody = { error: { code: string; message: string; issues?: Array<{ path: string; message: string }> } };

/** Issue 16's end-to-end rows: what Apple and Google document, held at every door and on the wire. */
describe('Apple\'s and Google\'s rules, end to end', () => {
  let sys: System;
  let key: string;
  let raw: Broker;

  beforeAll(async () => {
    sys = await startSystem({ env: API_TEST_ENV });
    key = await teamKey(sys, 'team-demo', [DEMO_APP.id]);
    raw = await connectBroker({ url: sys.vhost.amqpUrl, logger: createLogger({ service: 'test', level: 'warn', format: 'json' }), connectionName: 'raw' });
  });
  afterAll(async () => {
    await raw?.close();
    await sys?.stop();
  });

  const apiJob = (extra: Record<string, unknown>) => ({ id: randomUUID(), app: DEMO_APP.id, userId: 'u1', category: 'social', content: { title: 'hi' }, ...extra });
  const jobsPublished = async () => (await peekMessages(sys.vhost.name, Queues.jobs, 5000)).length;
  const firstDelivery = (token: string) =>
    waitFor(`delivery to ${token.slice(0, 8)}…`, async () => {
      const r = await delivered(sys.sandbox, { token });
      return r.length > 0 && r[0];
    });

  it.each(['price-€', 'fire-🔥'])('refuses the collapse key %j at the API, naming the 64-byte printable-ASCII rule', async (collapseKey) => {
    const r = await call<ErrorBody>(sys, 'POST', '/v1/jobs', { key, body: apiJob({ collapseKey }) });
    expect(r.status).toBe(400);
    expect(r.body.error.issues?.[0]?.path).toBe('collapseKey');
    expect(r.body.error.message).toMatch(/collapseKey: must be printable ASCII .*at most 64 bytes/);
  });

  it.each(['not a token', '../x'])('refuses the registration token %j with a 400 and stores nothing', async (token) => {
    for (const platform of ['apns', 'fcm']) {
      const r = await call<ErrorBody>(sys, 'POST', '/v1/devices', { key, body: { app: DEMO_APP.id, platform, token, userId: 'u-bad-token' } });
      expect(r.status).toBe(400);
      expect(r.body.error.issues?.[0]?.path).toBe('token');
    }
    expect(await peekMessages(sys.vhost.name, Queues.registrations, 1000)).toEqual([]);
    expect(await sys.database.db.kysely.selectFrom('devices').select('token').where('token', '=', token).execute()).toEqual([]);
  });

  it('refuses a 5 KB payload at the door with its computed size: API 400, client throws, AMQP parks', async () => {
    const content = { title: 'big', data: { blob: 'x'.repeat(5000) } };
    const before = await jobsPublished();
    const r = await call<ErrorBody>(sys, 'POST', '/v1/jobs', { key, body: apiJob({ content }) });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/content: APNs: payload too large: APNs alert payload is 50\d\d bytes, the limit is 4096/);
    expect(await jobsPublished()).toBe(before);
    await expect(sys.client.publishPushJob(job({ userId: 'u1', content }))).rejects.toThrow(/payload too large: .* is 50\d\d bytes, the limit is 4096/);
    await raw.publisher.publish({ exchange: Exchanges.jobs, routingKey: Queues.jobs, body: apiJob({ id: 'big-raw', content }) });
    const parked = await waitFor('parked big job', async () => (await peekMessages(sys.vhost.name, parkedQueueFor(Queues.jobs), 1000)).find((m) => m.payload.includes('big-raw')));
    expect(parked.properties.headers?.['x-herald-parked-code']).toBe('payload-too-large');
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toMatch(/is 50\d\d bytes, the limit is 4096/);
  });

  it('a push without expiry is stored by Apple (apns-expiration in 28 days, not 0)', async () => {
    const device: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [device]);
    const sentAt = Math.floor(Date.now() / 1000);
    await sys.client.publishPushJob(job({ userId: device.userId }));
    const record = await firstDelivery(device.token);
    const expiration = Number(record.headers['apns-expiration']);
    expect(expiration).toBeGreaterThanOrEqual(sentAt + 28 * 86_400 - 5);
    expect(expiration).toBeLessThanOrEqual(sentAt + 28 * 86_400 + 60);
  });

  it('a phone offline when the push is sent gets the newest alert when it reconnects (no expiry); a now-or-never push (ttl 0) it does not', async () => {
    const phones: Array<Device & { platform: PhonePlatform }> = [
      { userId: uniqueUser(), platform: 'apns', token: apnsToken() },
      { userId: uniqueUser(), platform: 'fcm', token: fcmToken() },
    ];
    await registerDevices(sys, phones);
    for (const phone of phones) await setPhoneOffline(sys.sandbox, { platform: phone.platform, token: phone.token });
    for (const phone of phones) {
      await sys.client.publishPushJob(job({ userId: phone.userId, ttl: 0, content: { title: 'now or never' } }));
      await firstDelivery(phone.token);
      // Apple keeps one notification per app; FCM keeps one notification message per app (its collapse key ignored).
      await sys.client.publishPushJob(job({ userId: phone.userId, collapseKey: 'first', content: { title: 'an older alert' } }));
      await waitFor('second push accepted', async () => (await delivered(sys.sandbox, { token: phone.token })).length === 2);
      await sys.client.publishPushJob(job({ userId: phone.userId, collapseKey: 'second', content: { title: 'while you were away' } }));
      await waitFor('third push accepted', async () => (await delivered(sys.sandbox, { token: phone.token })).length === 3);
      expect(await phoneDeliveries(sys.sandbox, phone)).toEqual([]);
    }
    for (const phone of phones) {
      expect(await setPhoneOnline(sys.sandbox, phone)).toBe(1);
      const got = await phoneDeliveries(sys.sandbox, phone);
      expect(got.map((d) => d.via)).toEqual(['stored']);
      expect(JSON.stringify(got[0]?.body)).toContain('while you were away');
      expect(JSON.stringify(got[0]?.body)).not.toContain('an older alert');
    }
  });

  it('an expiry 40 days ahead is capped at FCM\'s 4 weeks, and the answer and the job\'s status say so', async () => {
    const device: Device = { userId: uniqueUser(), platform: 'fcm', token: fcmToken() };
    await registerDevices(sys, [device]);
    const body = apiJob({ userId: device.userId, expiresAt: new Date(Date.now() + 40 * 86_400_000).toISOString() });
    const r = await call<{ notices?: string[] }>(sys, 'POST', '/v1/jobs', { key, body });
    expect(r.status).toBe(202);
    expect(r.body.notices).toEqual([expect.stringMatching(/40 days ahead: FCM stores a push at most 28 days/) as unknown]);
    const record = await firstDelivery(device.token);
    expect((record.body['message'] as { android: { ttl: string } }).android.ttl).toBe('2419200s');
    const status = await waitFor('job status with its outcome', async () => {
      const s = await call<{ delivered: number; notices: string[] }>(sys, 'GET', `/v1/jobs/${body.id}`, { key });
      return s.body.delivered === 1 && s.body;
    });
    expect(status.notices).toEqual(r.body.notices);
  });

  it('a data-only push arrives as a background push at priority 5 on iOS, directly and through FCM', async () => {
    const ios: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    const android: Device = { userId: ios.userId, platform: 'fcm', token: fcmToken() };
    await registerDevices(sys, [ios, android]);
    await sys.client.publishPushJob(job({ userId: ios.userId, content: { data: { sync: 'inbox' } }, priority: 'high' }));
    const apns = await firstDelivery(ios.token);
    expect(apns.headers).toMatchObject({ 'apns-push-type': 'background', 'apns-priority': '5' });
    expect(apns.body).toEqual({ sync: 'inbox', aps: { 'content-available': 1 } });
    const fcm = await firstDelivery(android.token);
    expect(fcm.body['message']).toMatchObject({
      data: { sync: 'inbox' },
      apns: { headers: { 'apns-push-type': 'background', 'apns-priority': '5' }, payload: { aps: { 'content-available': 1 } } },
    });
  });

  it('VoIP and Live Activity pushes carry Apple\'s topic suffix and push type, and reach only tokens of their kind', async () => {
    const userId = uniqueUser();
    const phone: Device = { userId, platform: 'apns', token: apnsToken() };
    const voip: Device = { userId, platform: 'apns', token: apnsToken(), tokenKind: 'voip' };
    const activity: Device = { userId, platform: 'apns', token: apnsToken(), tokenKind: 'liveactivity' };
    await registerDevices(sys, [phone, voip, activity]);
    await sys.client.publishPushJob(job({ userId, content: { pushType: 'voip', data: { caller: 'Ann' } } }));
    await sys.client.publishPushJob(job({ userId, content: { liveActivity: { event: 'update', contentState: { score: '2-1' } } } }));
    const call1 = await firstDelivery(voip.token);
    // A call without an expiry is now or never: Apple must not ring it hours later.
    expect(call1.headers).toMatchObject({ 'apns-topic': `${DEMO_APP.apnsTopic}.voip`, 'apns-push-type': 'voip', 'apns-priority': '10', 'apns-expiration': '0' });
    const update = await firstDelivery(activity.token);
    expect(update.headers).toMatchObject({ 'apns-topic': `${DEMO_APP.apnsTopic}.push-type.liveactivity`, 'apns-push-type': 'liveactivity' });
    expect(update.body['aps']).toMatchObject({ event: 'update', 'content-state': { score: '2-1' }, timestamp: expect.any(Number) as unknown });
    // An ordinary push reaches the device token only; neither special push reached it.
    await sys.client.publishPushJob(job({ userId }));
    await firstDelivery(phone.token);
    expect((await delivered(sys.sandbox, { token: phone.token })).map((r) => r.headers['apns-push-type'])).toEqual(['alert']);
    expect(await delivered(sys.sandbox, { token: voip.token })).toHaveLength(1);
  });
});
