import { Exchanges, Headers, Queues, parkedQueueFor } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker, type Broker } from '@herald/messaging';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apnsToken, fcmToken, job, registerDevices, uniqueUser, type Device } from '../support/fixtures.ts';
import { metric } from '../support/metrics.ts';
import { delivered } from '../support/sandbox-client.ts';
import { startSystem, type System } from '../support/system.ts';

describe('bad input is parked with a readable reason, counted, and the services keep running', () => {
  let sys: System;
  let raw: Broker;
  const device: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };

  beforeAll(async () => {
    sys = await startSystem();
    raw = await connectBroker({ url: sys.vhost.amqpUrl, logger: createLogger({ service: 'test', level: 'warn', format: 'json' }), connectionName: 'raw' });
    await registerDevices(sys, [device]);
  });
  afterAll(async () => {
    await raw?.close();
    await sys?.stop();
  });

  const publishRawJob = (body: Buffer | object) => raw.publisher.publish({ exchange: Exchanges.jobs, routingKey: Queues.jobs, body });
  const parkedJob = async (match: (payload: string) => boolean) =>
    waitFor('parked job', async () => (await peekMessages(sys.vhost.name, parkedQueueFor(Queues.jobs), 1000)).find((m) => match(m.payload)));

  /** After bad input the demuxer must still deliver a good job. */
  async function stillDelivers(): Promise<void> {
    const before = (await delivered(sys.sandbox, { token: device.token })).length;
    await sys.client.publishPushJob(job({ userId: device.userId }));
    await waitFor('a good job after bad input', async () => (await delivered(sys.sandbox, { token: device.token })).length > before);
    expect(sys.service('demuxer').running).toBe(true);
  }

  it('parks malformed JSON', async () => {
    await publishRawJob(Buffer.from('{"id": "broken", '));
    const parked = await parkedJob((p) => p.startsWith('{"id": "broken"'));
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toMatch(/^malformed JSON/);
    expect(parked.properties.headers?.[Headers.originalQueue]).toBe(Queues.jobs);
    expect(await metric(sys.service('demuxer'), 'herald_messages_parked_total', { queue: Queues.jobs, code: 'malformed-json' })).toBe(1);
    await stillDelivers();
  });

  it('parks a job that fails the schema, naming the field', async () => {
    await publishRawJob({ id: 'schema-bad', app: 'demo', userId: 'u', category: 'x', content: { title: 'hi', badge: 'three' } });
    const parked = await parkedJob((p) => p.includes('schema-bad'));
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toMatch(/content\.badge/);
    expect(await metric(sys.service('demuxer'), 'herald_messages_parked_total', { queue: Queues.jobs, code: 'schema' })).toBe(1);
    await stillDelivers();
  });

  it('parks a job holding a NUL character, which PostgreSQL cannot store, and delivers the job published with it', async () => {
    // Before: the job passed the schema, and PostgreSQL refused the targeting statement of its whole batch, again on every redelivery.
    const schemaParks = await metric(sys.service('demuxer'), 'herald_messages_parked_total', { queue: Queues.jobs, code: 'schema' });
    const before = (await delivered(sys.sandbox, { token: device.token })).length;
    await Promise.all([
      publishRawJob(job({ id: 'nul-user-job', userId: `${device.userId}\u0000` })),
      publishRawJob(job({ id: 'beside-nul-job', userId: device.userId })),
    ]);
    const parked = await parkedJob((p) => p.includes('nul-user-job'));
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toBe('schema violation: userId: must not contain the NUL character (U+0000)');
    expect(await metric(sys.service('demuxer'), 'herald_messages_parked_total', { queue: Queues.jobs, code: 'schema' })).toBe(schemaParks + 1);
    await waitFor('the job published beside it', async () => (await delivered(sys.sandbox, { token: device.token })).length > before);
  });

  it('parks a job for an unknown app', async () => {
    await sys.client.publishPushJob(job({ id: 'unknown-app-job', app: 'no-such-app', userId: device.userId }));
    const parked = await parkedJob((p) => p.includes('unknown-app-job'));
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toBe('unknown app "no-such-app"');
    expect(await metric(sys.service('demuxer'), 'herald_messages_parked_total', { queue: Queues.jobs, code: 'unknown-app' })).toBe(1);
    // Counted without its app: an app id that exists nowhere, published over AMQP, makes no series.
    expect(await metric(sys.service('demuxer'), 'herald_demuxer_jobs_total', { outcome: 'parked', app: '' })).toBeGreaterThanOrEqual(1);
    expect(await metric(sys.service('demuxer'), 'herald_demuxer_jobs_total', { app: 'no-such-app' })).toBe(0);
    await stillDelivers();
  });

  it('parks content over the provider size limit before fanning out (published past the client library\'s own check)', async () => {
    const before = (await delivered(sys.sandbox, { token: device.token })).length;
    await publishRawJob(job({ id: 'too-big-job', userId: device.userId, content: { title: 'big', data: { blob: 'x'.repeat(5000) } } }));
    const parked = await parkedJob((p) => p.includes('too-big-job'));
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toMatch(/4096|too large|limit/i);
    expect(await metric(sys.service('demuxer'), 'herald_messages_parked_total', { queue: Queues.jobs, code: 'payload-too-large' })).toBe(1);
    expect((await delivered(sys.sandbox, { token: device.token })).length).toBe(before);
    await stillDelivers();
  });

  it('acknowledges and counts a job for a user with no devices', async () => {
    const nobody = job({ userId: uniqueUser('nobody') });
    await sys.client.publishPushJob(nobody);
    // By app: HeraldAppJobsFindNoDevices compares an app's no-devices share with the day before.
    await waitFor('no-devices count', async () => (await metric(sys.service('demuxer'), 'herald_demuxer_jobs_total', { outcome: 'no-devices', app: nobody.app })) === 1);
    expect((await peekMessages(sys.vhost.name, Queues.jobs, 10)).length).toBe(0);
  });

  it('turns a dead token into an Invalidation message', async () => {
    const dead: Device = { userId: uniqueUser(), platform: 'fcm', token: fcmToken() };
    await registerDevices(sys, [dead]);
    await fetch(`${sys.sandbox.settings.control.url}/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ platform: 'fcm', token: dead.token, error: 'UNREGISTERED' }),
    });
    await sys.client.publishPushJob(job({ userId: dead.userId }));
    // The fcm-invalidator consumes the Invalidation at once: its effect is the device row.
    const row = await waitFor('invalidation applied', async () => {
      const d = await sys.database.db.kysely.selectFrom('devices').selectAll().where('token', '=', dead.token).executeTakeFirst();
      return d?.invalidated_at != null && d;
    });
    expect(row).toMatchObject({ platform: 'fcm', app: 'demo', token: dead.token });
    // FCM v1's own error code and message, as Google documents them.
    expect(row.invalidation_reason).toMatch(/^UNREGISTERED: /);
    expect(await metric(sys.service('fcm-pusher'), 'herald_pushes_total', { platform: 'fcm', outcome: 'invalid' })).toBe(1);
  });
});
