import { derivePushId } from '@herald/contracts';
import { waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apnsToken, deviceIdOf, fcmToken, job, registerDevices, uniqueUser, type Device } from '../support/fixtures.ts';
import { metric } from '../support/metrics.ts';
import { delivered } from '../support/sandbox-client.ts';
import { DEMO_APP, startSystem, type System } from '../support/system.ts';

const RECHECK_MS = 1_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('a push job travels end to end', () => {
  let sys: System;
  beforeAll(async () => {
    // A push older than a second has its user's opt-outs and mutes asked again (default 10 s).
    sys = await startSystem({ env: { PREFERENCES_RECHECK_AFTER_MS: String(RECHECK_MS) } });
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it('delivers to an APNs device with the headers and body Apple documents', async () => {
    const device: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [device]);
    const sent = await sys.client.publishPushJob(
      job({
        userId: device.userId,
        content: { title: 'Hello', body: 'A friend liked your photo', badge: 3, sound: 'default', data: { photoId: '42' } },
        collapseKey: 'likes',
        expiresAt: '2099-01-01T00:00:00Z',
      }),
    );
    const [record] = await waitFor('APNs delivery', async () => {
      const r = await delivered(sys.sandbox, { token: device.token });
      return r.length > 0 && r;
    });
    expect(record!.path).toBe(`/3/device/${device.token}`);
    expect(record!.headers).toMatchObject({
      'apns-topic': DEMO_APP.apnsTopic,
      'apns-push-type': 'alert',
      'apns-priority': '10',
      'apns-expiration': String(Date.parse('2099-01-01T00:00:00Z') / 1000),
      'apns-collapse-id': 'likes',
      'apns-id': derivePushId(sent.id, await deviceIdOf(sys, device)),
    });
    expect(record!.headers['apns-id']).toMatch(UUID);
    expect(record!.headers['authorization']).toMatch(/^bearer /i);
    expect(record!.body).toEqual({
      aps: { alert: { title: 'Hello', body: 'A friend liked your photo' }, badge: 3, sound: 'default' },
      photoId: '42',
    });
  });

  it('delivers to an FCM device with the v1 message shape', async () => {
    const device: Device = { userId: uniqueUser(), platform: 'fcm', token: fcmToken() };
    await registerDevices(sys, [device]);
    await sys.client.publishPushJob(
      job({ userId: device.userId, content: { title: 'Hi', body: 'There', data: { k: 'v' } }, ttl: 3600, priority: 'normal', collapseKey: 'c1' }),
    );
    const [record] = await waitFor('FCM delivery', async () => {
      const r = await delivered(sys.sandbox, { token: device.token });
      return r.length > 0 && r;
    });
    expect(record!.path).toBe(`/v1/projects/${sys.sandbox.settings.fcm.projectId}/messages:send`);
    const message = (record!.body as { message: Record<string, unknown> }).message;
    expect(message['token']).toBe(device.token);
    expect(message['notification']).toEqual({ title: 'Hi', body: 'There' });
    expect(message['data']).toEqual({ k: 'v' });
    // Google's AndroidMessagePriority enum values.
    expect(message['android']).toMatchObject({ priority: 'NORMAL', collapse_key: 'c1' });
    const ttl = (message['android'] as { ttl: string }).ttl;
    expect(Number(ttl.replace(/s$/, ''))).toBeGreaterThan(3500);
    expect(Number(ttl.replace(/s$/, ''))).toBeLessThanOrEqual(3600);
  });

  it('sends one push per device of a user with several devices on both platforms', async () => {
    const userId = uniqueUser();
    const devices: Device[] = [
      { userId, platform: 'apns', token: apnsToken() },
      { userId, platform: 'apns', token: apnsToken() },
      { userId, platform: 'fcm', token: fcmToken() },
    ];
    await registerDevices(sys, devices);
    await sys.client.publishPushJob(job({ userId }));
    for (const d of devices) {
      await waitFor(`delivery to ${d.platform} device`, async () => (await delivered(sys.sandbox, { token: d.token })).length === 1);
    }
  });

  it('fans a job for many users out to every device, once each', async () => {
    const devices: Device[] = Array.from({ length: 60 }, (_, i) => ({
      userId: uniqueUser(`many${i}`),
      platform: i % 2 === 0 ? ('apns' as const) : ('fcm' as const),
      token: i % 2 === 0 ? apnsToken() : fcmToken(),
    }));
    await registerDevices(sys, devices);
    await sys.client.publishPushJob(job({ userIds: devices.map((d) => d.userId) }));
    const tokens = new Set(devices.map((d) => d.token));
    await waitFor('60 deliveries', async () => {
      const got = (await delivered(sys.sandbox)).filter((r) => tokens.has(tokenOf(r)));
      return got.length >= 60;
    });
    const got = (await delivered(sys.sandbox)).filter((r) => tokens.has(tokenOf(r)));
    expect(new Set(got.map(tokenOf)).size).toBe(60);
    expect(got).toHaveLength(60);
  });

  it('publishing the same job id twice delivers once per device: the second copy finds the push done in the ledger and is acked unsent', async () => {
    const device: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [device]);
    const pusher = sys.service('apns-pusher');
    const duplicates = () => metric(pusher, 'herald_pushes_total', { platform: 'apns', outcome: 'duplicate' });
    const first = job({ userId: device.userId });
    const sent = await sys.client.publishPushJob(first);
    const pushId = derivePushId(sent.id, await deviceIdOf(sys, device));
    const ledgerState = async () =>
      (await sys.database.db.kysely.selectFrom('delivery_ledger').select('state').where('push_id', '=', pushId).executeTakeFirst())?.state;
    // The copy goes once the first is recorded, so it meets the ledger's done state (not a live
    // claim, which would defer it for seconds, past any check made here).
    await waitFor('first delivery recorded', async () => (await ledgerState()) === 'done');
    const before = await duplicates();
    await sys.client.publishPushJob(first);
    await waitFor('the second copy decided', async () => (await duplicates()) > before || (await delivered(sys.sandbox, { token: device.token })).length > 1);
    expect((await delivered(sys.sandbox, { token: device.token })).map((r) => titleOf(r))).toEqual(['Hello']);
    expect(await duplicates()).toBe(before + 1);
  });

  it('honours opt-outs by category and mutes by object', async () => {
    const device: Device = { userId: uniqueUser(), platform: 'fcm', token: fcmToken() };
    await registerDevices(sys, [device]);
    await sys.database.db.preferences.setOptOut(device.userId, 'marketing', true);
    await sys.database.db.preferences.setMute(device.userId, 'thread:7', null);
    await sys.client.publishPushJob(job({ userId: device.userId, category: 'marketing', content: { title: 'opted out' } }));
    await sys.client.publishPushJob(job({ userId: device.userId, objectId: 'thread:7', content: { title: 'muted' } }));
    await sys.client.publishPushJob(job({ userId: device.userId, objectId: 'thread:8', content: { title: 'allowed' } }));
    await waitFor('allowed delivery', async () => (await delivered(sys.sandbox, { token: device.token })).length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect((await delivered(sys.sandbox, { token: device.token })).map((r) => fcmTitle(r))).toEqual(['allowed']);
  });

  it('asks opt-outs and mutes again of a push that waited: one queued while its pusher was down is not sent to a user who opted out or muted meanwhile', async () => {
    const device: Device = { userId: uniqueUser(), platform: 'fcm', token: fcmToken() };
    await registerDevices(sys, [device]);
    const jobs = [
      job({ userId: device.userId, category: 'marketing', content: { title: 'opted out' } }),
      job({ userId: device.userId, objectId: 'thread:9', content: { title: 'muted' } }),
      job({ userId: device.userId, objectId: 'thread:10', content: { title: 'allowed' } }),
    ];
    const pusher = sys.service('fcm-pusher');
    await pusher.stop('SIGTERM');
    try {
      for (const j of jobs) await sys.client.publishPushJob(j);
      await waitFor('the three pushes queued', async () => {
        const statuses = await Promise.all(jobs.map((j) => sys.database.db.jobs.status(j.id)));
        return statuses.every((s) => s?.job.targeted === 1);
      });
      // Made for a user who wanted them; then the user changed their mind while they waited.
      await sys.database.db.preferences.setOptOut(device.userId, 'marketing', true, DEMO_APP.id);
      await sys.database.db.preferences.setMute(device.userId, 'thread:9', null, DEMO_APP.id);
      await new Promise((r) => setTimeout(r, RECHECK_MS + 100));
    } finally {
      await pusher.start();
    }
    await waitFor('allowed delivery', async () => (await delivered(sys.sandbox, { token: device.token })).length >= 1);
    const outcomes = await waitFor('every outcome', async () => {
      const all = await Promise.all(jobs.map(async (j) => (await sys.database.db.jobs.pushes(j.id, { limit: 10 }))[0]));
      return all.every((p) => p !== undefined && p.outcome !== 'scheduled') && all;
    });
    expect(outcomes).toMatchObject([
      { outcome: 'opted-out', reason: 'its user opted out of category "marketing" after the push was made' },
      { outcome: 'muted', reason: 'its user muted "thread:9" after the push was made' },
      { outcome: 'delivered' },
    ]);
    expect((await delivered(sys.sandbox, { token: device.token })).map((r) => fcmTitle(r))).toEqual(['allowed']);
  });
});

const tokenOf = (r: { path: string; body: Record<string, unknown> }): string =>
  r.path.startsWith('/3/device/') ? r.path.slice('/3/device/'.length) : String((r.body['message'] as { token: string }).token);
const titleOf = (r: { body: Record<string, unknown> }): string | undefined =>
  ((r.body['aps'] as { alert?: { title?: string } } | undefined)?.alert?.title);
const fcmTitle = (r: { body: Record<string, unknown> }): string | undefined =>
  ((r.body['message'] as { notification?: { title?: string } }).notification?.title);
