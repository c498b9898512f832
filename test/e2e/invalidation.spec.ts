import { Headers, Queues, parkedQueueFor } from '@herald/contracts';
import { HeraldHeaders } from '@herald/messaging';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { herald as runHerald } from '../support/cli.ts';
import { apnsToken, fcmToken, job, registerDevices, uniqueUser, type Device } from '../support/fixtures.ts';
import { metric } from '../support/metrics.ts';
import { delivered, injectFault, sandboxRecords } from '../support/sandbox-client.ts';
import { DEMO_APP, startSystem, type System } from '../support/system.ts';

describe('dead tokens, retries, parking and replay, end to end', () => {
  let sys: System;
  beforeAll(async () => {
    sys = await startSystem();
  });
  afterAll(async () => {
    await sys?.stop();
  });

  const apns = (): Device => ({ userId: uniqueUser(), platform: 'apns', token: apnsToken() });
  const device = (token: string) => sys.database.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirst();
  const deadDevice = (token: string) =>
    waitFor(`device ${token.slice(-6)} invalidated`, async () => {
      const row = await device(token);
      return row?.invalidated_at != null && row;
    });
  const herald = (...args: string[]) => runHerald({ ...sys.env, LOG_LEVEL: 'warn' }, ...args);

  it('APNs 410 for a token registered before its timestamp: the device is dead and no longer targeted', async () => {
    const dead = apns();
    const alive: Device = { ...apns(), userId: dead.userId };
    await registerDevices(sys, [dead, alive]);
    await injectFault(sys.sandbox, { platform: 'apns', token: dead.token, error: 'Unregistered' });
    await sys.client.publishPushJob(job({ userId: dead.userId }));
    const row = await deadDevice(dead.token);
    expect(row.invalidation_reason).toBe('Unregistered');
    const [answer] = await sandboxRecords(sys.sandbox, { token: dead.token });
    expect(row.invalidated_at?.getTime()).toBe((answer?.response as { timestamp: number }).timestamp);

    await sys.client.publishPushJob(job({ userId: dead.userId }));
    await waitFor('second push to the live device', async () => (await delivered(sys.sandbox, { token: alive.token })).length === 2);
    expect(await sandboxRecords(sys.sandbox, { token: dead.token })).toHaveLength(1);
  });

  it('APNs 410 older than the latest registration: the token stays valid', async () => {
    const d = apns();
    await sys.client.publishRegistration({ kind: 'register', app: DEMO_APP.id, platform: 'apns', token: d.token, userId: d.userId, eventAt: new Date().toISOString() });
    await waitFor('device stored', async () => (await device(d.token)) !== undefined);
    // Apple last confirmed the token invalid an hour before the app registered it again.
    await injectFault(sys.sandbox, { platform: 'apns', token: d.token, error: 'Unregistered', times: 1, unregisteredAtMs: Date.now() - 3_600_000 });
    await sys.client.publishPushJob(job({ userId: d.userId }));
    await waitFor('stale invalidation', async () => (await metric(sys.service('apns-invalidator'), 'herald_invalidations_total', { result: 'stale' })) >= 1);
    expect((await device(d.token))?.invalidated_at).toBeNull();
    await sys.client.publishPushJob(job({ userId: d.userId }));
    await waitFor('a push to the re-registered token', async () => (await delivered(sys.sandbox, { token: d.token })).length === 1);
  });

  it('APNs 410 after a registration from a clock running an hour ahead: the token is dead all the same', async () => {
    const d = apns();
    const alive: Device = { ...apns(), userId: d.userId };
    await registerDevices(sys, [alive]);
    // Last event wins: taken as given, this event time would make every 410 of the next hour stale.
    const eventAt = new Date(Date.now() + 3_600_000).toISOString();
    await sys.client.publishRegistration({ kind: 'register', app: DEMO_APP.id, platform: 'apns', token: d.token, userId: d.userId, eventAt });
    await waitFor('device stored', async () => (await device(d.token)) !== undefined);
    expect((await device(d.token))?.registered_at?.getTime()).toBeLessThanOrEqual(Date.now());
    await injectFault(sys.sandbox, { platform: 'apns', token: d.token, error: 'Unregistered', times: 1 });
    await sys.client.publishPushJob(job({ userId: d.userId }));
    expect((await deadDevice(d.token)).invalidation_reason).toBe('Unregistered');
    await sys.client.publishPushJob(job({ userId: d.userId }));
    await waitFor('second push to the live device', async () => (await delivered(sys.sandbox, { token: alive.token })).length === 2);
    expect(await sandboxRecords(sys.sandbox, { token: d.token })).toHaveLength(1); // the dead token gets nothing more
  });

  it('APNs 400 BadDeviceToken and FCM UNREGISTERED mark the device dead', async () => {
    const bad = apns();
    const gone: Device = { userId: uniqueUser(), platform: 'fcm', token: fcmToken() };
    const good = apns();
    await registerDevices(sys, [bad, gone, good]);
    // BadDeviceToken condemns the token only while the app's pushes go through (the next spec).
    await sys.client.publishPushJob(job({ userId: good.userId }));
    await waitFor('a push of the app delivered', async () => (await delivered(sys.sandbox, { token: good.token })).length === 1);
    await injectFault(sys.sandbox, { platform: 'apns', token: bad.token, error: 'BadDeviceToken' });
    await injectFault(sys.sandbox, { platform: 'fcm', token: gone.token, error: 'UNREGISTERED' });
    await sys.client.publishPushJob(job({ userIds: [bad.userId, gone.userId] }));
    expect((await deadDevice(bad.token)).invalidation_reason).toBe('BadDeviceToken');
    expect((await deadDevice(gone.token)).invalidation_reason).toMatch(/not-registered|UNREGISTERED/);
  });

  it("APNs BadDeviceToken for an app none of whose pushes went through keeps the token (the app's APNs environment may be wrong), and condemns it once one has", async () => {
    const app = `quiet-${uniqueUser().slice(-6)}`;
    await sys.database.db.apps.upsert({ id: app, apnsTopic: 'com.herald.quiet' });
    const bad = apns();
    const good = apns();
    for (const d of [bad, good]) {
      await sys.client.publishRegistration({ kind: 'register', app, platform: 'apns', token: d.token, userId: d.userId, eventAt: new Date().toISOString() });
    }
    await waitFor('devices stored', async () => (await device(bad.token)) !== undefined && (await device(good.token)) !== undefined);
    await injectFault(sys.sandbox, { platform: 'apns', token: bad.token, error: 'BadDeviceToken' });
    await sys.client.publishPushJob(job({ app, userId: bad.userId }));
    const parked = await waitFor('the push parked, the token kept', async () => {
      return (await peekMessages(sys.vhost.name, parkedQueueFor(Queues.apnsSend), 1000)).find((m) => m.payload.includes(bad.token));
    });
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toMatch(/BadDeviceToken \(token kept: none of this app's pushes was delivered in the last hour/);
    expect((await device(bad.token))?.invalidated_at).toBeNull();
    // One push of the app delivered: the next BadDeviceToken is the token's.
    await sys.client.publishPushJob(job({ app, userId: good.userId }));
    await waitFor('a push of the app delivered', async () => (await delivered(sys.sandbox, { token: good.token })).length === 1);
    await sys.client.publishPushJob(job({ app, userId: bad.userId }));
    expect((await deadDevice(bad.token)).invalidation_reason).toBe('BadDeviceToken');
  });

  it('retries a transient failure and then delivers once', async () => {
    const d = apns();
    await registerDevices(sys, [d]);
    await injectFault(sys.sandbox, { platform: 'apns', token: d.token, error: 'ServiceUnavailable', times: 1 });
    await sys.client.publishPushJob(job({ userId: d.userId }));
    await waitFor('delivered after a retry', async () => (await delivered(sys.sandbox, { token: d.token })).length === 1);
    expect((await sandboxRecords(sys.sandbox, { token: d.token })).map((r) => r.status)).toEqual([503, 200]);
  });

  it('parks a push whose retries ran out, saying why and after how many attempts; replay delivers it once', async () => {
    const d = apns();
    await registerDevices(sys, [d]);
    await injectFault(sys.sandbox, { platform: 'apns', token: d.token, error: 'ServiceUnavailable' });
    await sys.client.publishPushJob(job({ userId: d.userId }));
    const parkedQueue = parkedQueueFor(Queues.apnsSend);
    const parked = await waitFor('parked push', async () => (await peekMessages(sys.vhost.name, parkedQueue, 100)).find((m) => m.payload.includes(d.token)));
    const headers = parked.properties.headers ?? {};
    expect(headers[HeraldHeaders.parkedCode]).toBe('retries-exhausted');
    expect(String(headers[Headers.parkedReason])).toMatch(/ServiceUnavailable|503/);
    expect(headers[Headers.attempt]).toBe(3); // first try + the two retries of TEST_RETRY_DELAYS_MS
    expect(headers[Headers.originalQueue]).toBe(Queues.apnsSend);
    expect(await sandboxRecords(sys.sandbox, { token: d.token })).toHaveLength(3);

    const listed = await herald('parked', 'list', Queues.apnsSend, '--json');
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toContainEqual(expect.objectContaining({ id: parked.properties.message_id, app: DEMO_APP.id, code: 'retries-exhausted', attempts: 3 }));
    // By app: an operator replays or purges one app's parked pushes (its credentials fixed), not every app's.
    const ofOther = await herald('parked', 'list', Queues.apnsSend, '--app', 'other-app', '--json');
    expect(JSON.parse(ofOther.stdout)).toEqual([]);
    const otherReplay = await herald('parked', 'replay', Queues.apnsSend, '--all', '--app', 'other-app');
    expect([otherReplay.code, otherReplay.stderr]).toEqual([1, expect.stringMatching(/^herald: none of the \d+ parked message\(s\) in push\.apns\.send\.parked is of app "other-app"/)]);
    const otherPurge = await herald('parked', 'purge', Queues.apnsSend, '--code', 'retries-exhausted', '--app', 'other-app');
    expect(otherPurge.code).toBe(1);
    // A mistyped code replays and purges nothing, and says so with a non-zero exit (it answered 0 of N, exit 0).
    for (const action of ['replay', 'purge']) {
      const typo = await herald('parked', action, Queues.apnsSend, '--code', 'retries-exhaustd');
      expect([typo.code, typo.stderr], action).toEqual([1, expect.stringMatching(/^herald: none of the \d+ parked message\(s\) in push\.apns\.send\.parked was parked with code "retries-exhaustd"/)]);
    }
    expect((await peekMessages(sys.vhost.name, parkedQueue, 100)).some((m) => m.payload.includes(d.token))).toBe(true);

    await fetch(`${sys.sandbox.settings.control.url}/faults`, { method: 'DELETE' });
    const replay = await herald('parked', 'replay', Queues.apnsSend, '--id', String(parked.properties.message_id));
    expect(replay.stdout).toMatch(/replayed 1 of/);
    await waitFor('replayed push delivered', async () => (await delivered(sys.sandbox, { token: d.token })).length === 1);
    expect((await peekMessages(sys.vhost.name, parkedQueue, 100)).filter((m) => m.payload.includes(d.token))).toHaveLength(0);
    // A second replay finds nothing to move, says so on stderr with a non-zero exit, and nothing more is sent.
    const again = await herald('parked', 'replay', Queues.apnsSend, '--id', String(parked.properties.message_id));
    expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/^herald: no parked message \S+ in push\.apns\.send\.parked: `herald parked list push\.apns\.send` shows them\n$/)]);
    const purge = await herald('parked', 'purge', Queues.apnsSend, '--id', 'no-such-message');
    expect([purge.code, purge.stderr]).toEqual([1, expect.stringMatching(/^herald: no parked message no-such-message in push\.apns\.send\.parked/)]);
    await new Promise((r) => setTimeout(r, 1000));
    expect(await delivered(sys.sandbox, { token: d.token })).toHaveLength(1);
  });

  it('drops, unsent, a push queued for a token that was invalidated meanwhile', async () => {
    const d = apns();
    await registerDevices(sys, [d]);
    await sys.service('apns-pusher').stop('SIGTERM');
    await sys.client.publishPushJob(job({ userId: d.userId }));
    await waitFor('push queued', async () => (await peekMessages(sys.vhost.name, Queues.apnsSend, 100)).some((m) => m.payload.includes(d.token)));
    await sys.client.publishRegistration({ kind: 'unregister', app: DEMO_APP.id, platform: 'apns', token: d.token, eventAt: new Date().toISOString() });
    await deadDevice(d.token);
    await sys.service('apns-pusher').start();
    await waitFor('dropped as invalid', async () => (await metric(sys.service('apns-pusher'), 'herald_pushes_total', { outcome: 'invalid' })) === 1);
    expect(await sandboxRecords(sys.sandbox, { token: d.token })).toHaveLength(0);
    expect((await peekMessages(sys.vhost.name, Queues.apnsSend, 100)).some((m) => m.payload.includes(d.token))).toBe(false);
  });
});
