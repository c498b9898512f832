import { randomUUID } from 'node:crypto';
import { Exchanges, Headers, Queues, derivePushId, parkedQueueFor, type DevicePush } from '@herald/contracts';
import type { ScheduledPushInput } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, type Broker } from '@herald/messaging';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { herald as runHerald } from '../support/cli.ts';
import { apnsToken, job, registerDevices, uniqueUser, type Device } from '../support/fixtures.ts';
import { metric } from '../support/metrics.ts';
import { delivered } from '../support/sandbox-client.ts';
import { ServiceProcess } from '../support/service-process.ts';
import { DEMO_APP, startSystem, type System } from '../support/system.ts';

const ROWS = 2_000;

describe('scheduled pushes', () => {
  let sys: System;
  let raw: Broker;
  let second: ServiceProcess;
  beforeAll(async () => {
    sys = await startSystem({ env: { DESCHEDULER_BATCH_SIZE: '50' } });
    raw = await connectBroker({ url: sys.vhost.amqpUrl, logger: createLogger({ service: 'test', level: 'warn', format: 'json' }), connectionName: 'raw' });
    second = new ServiceProcess('apns-descheduler-2', 'apns-descheduler', {
      AMQP_URL: sys.vhost.amqpUrl,
      DATABASE_URL: sys.database.url,
      DATABASE_SCHEMA: sys.database.schema,
      LOG_FORMAT: 'json',
      HTTP_PORT: '0',
      DESCHEDULER_BATCH_SIZE: '50',
    });
  });
  afterAll(async () => {
    await second?.stop('SIGTERM');
    await raw?.close();
    await sys?.stop();
  });

  const storedRows = (jobId: string) => sys.database.db.kysely.selectFrom('scheduled_pushes').selectAll().where('job_id', '=', jobId).execute();
  const countsByToken = async (tokens: ReadonlySet<string>) => {
    const counts = new Map<string, number>();
    for (const r of await delivered(sys.sandbox, { platform: 'apns' })) {
      const token = r.path.slice('/3/device/'.length);
      if (tokens.has(token)) counts.set(token, (counts.get(token) ?? 0) + 1);
    }
    return counts;
  };
  const released = (s: ServiceProcess) => metric(s, 'herald_descheduler_pushes_total', { outcome: 'released' });

  it('holds a push until deliverAt and then releases it through the descheduler, not before', async () => {
    const device: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [device]);
    const dueAt = new Date(Date.now() + 2_500);
    const sent = await sys.client.publishPushJob(job({ userId: device.userId, deliverAt: { at: dueAt.toISOString() } }));
    const row = await waitFor('stored push', async () => (await storedRows(sent.id))[0]);
    expect(row.due_at).toEqual(dueAt);
    await new Promise((r) => setTimeout(r, Math.max(0, dueAt.getTime() - Date.now() - 400)));
    expect(await delivered(sys.sandbox, { token: device.token })).toEqual([]);
    const record = await waitFor('scheduled delivery', async () => (await delivered(sys.sandbox, { token: device.token }))[0]);
    expect(Date.parse(record.receivedAt)).toBeGreaterThanOrEqual(dueAt.getTime());
    expect(Date.parse(record.receivedAt)).toBeLessThan(dueAt.getTime() + 10_000); // generous: CI machines are busy
    expect(await storedRows(sent.id)).toEqual([]);
    expect(await released(sys.service('apns-descheduler'))).toBeGreaterThanOrEqual(1);
  });

  it("a stored push does not go to whoever holds the device's token when it falls due: a phone handed on gets nothing of its former user's", async () => {
    const device: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [device]);
    const sent = await sys.client.publishPushJob(job({ userId: device.userId, deliverAt: { at: new Date(Date.now() + 3_000).toISOString() } }));
    await waitFor('stored push', async () => (await storedRows(sent.id)).length === 1);
    // Before it is due, the app registers the same token for the phone's new owner.
    const newOwner = uniqueUser();
    await sys.client.publishRegistration({ kind: 'register', app: DEMO_APP.id, platform: 'apns', token: device.token, userId: newOwner, eventAt: new Date().toISOString() });
    await waitFor('the device is the new owner’s', async () => (await sys.database.db.kysely.selectFrom('devices').select('user_id').where('token', '=', device.token).executeTakeFirst())?.user_id === newOwner);
    const [push] = await waitFor('its outcome', async () => {
      const pushes = await sys.database.db.jobs.pushes(sent.id, { limit: 10 });
      return pushes[0]?.outcome !== 'scheduled' && pushes.length > 0 && pushes;
    });
    expect(push).toMatchObject({ outcome: 'invalid', code: 'reassigned', reason: 'the device was registered to another user after the push was queued' });
    // The outcome (kept with the job, past an erasure of the user) does not name the user.
    expect(JSON.stringify(push)).not.toContain(device.userId);
    expect(await delivered(sys.sandbox, { token: device.token })).toEqual([]);
  });

  it("a stored push goes to the token that replaced its device's: a register naming the old token as its previousToken", async () => {
    const device: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [device]);
    const sent = await sys.client.publishPushJob(job({ userId: device.userId, deliverAt: { at: new Date(Date.now() + 3_000).toISOString() } }));
    await waitFor('stored push', async () => (await storedRows(sent.id)).length === 1);
    // Before it is due, iOS hands the app a new token (a restore onto the same phone, say), and the app registers it naming the old one.
    const rotated = apnsToken();
    await sys.client.publishRegistration({ kind: 'register', app: DEMO_APP.id, platform: 'apns', token: rotated, previousToken: device.token, userId: device.userId, eventAt: new Date().toISOString() });
    const rowOf = (token: string) => sys.database.db.kysely.selectFrom('devices').select(['id', 'invalidation_reason']).where('token', '=', token).executeTakeFirst();
    await waitFor('the old token replaced', async () => (await rowOf(device.token))?.invalidation_reason === 'replaced');
    const [push] = await waitFor('its outcome', async () => {
      const pushes = await sys.database.db.jobs.pushes(sent.id, { limit: 10 });
      return pushes[0]?.outcome !== 'scheduled' && pushes.length > 0 && pushes;
    });
    expect(push).toMatchObject({ pushId: derivePushId(sent.id, String((await rowOf(device.token))?.id)), outcome: 'delivered', deviceId: String((await rowOf(rotated))?.id), token: rotated });
    expect(await delivered(sys.sandbox, { token: rotated })).toHaveLength(1);
    expect(await delivered(sys.sandbox, { token: device.token })).toEqual([]);
    expect(await metric(sys.service('apns-pusher'), 'herald_pushes_moved_total', { platform: 'apns', app: DEMO_APP.id })).toBe(1);
    // The job adds up: one push, delivered.
    expect((await sys.database.db.jobs.status(sent.id))?.outcomes).toEqual({ delivered: 1 });
  });

  it("resolves a local time in each device's timezone; an unknown zone falls back to UTC and is counted", async () => {
    const india: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    const mars: Device = { userId: uniqueUser(), platform: 'apns', token: apnsToken() };
    await registerDevices(sys, [india], { timezone: 'Asia/Kolkata' });
    // Registration now refuses unknown zones; a row stored before that check still holds one.
    await registerDevices(sys, [mars]);
    await sys.database.db.kysely.updateTable('devices').set({ timezone: 'Mars/Olympus_Mons' }).where('token', '=', mars.token).execute();
    // Three hours from now, to the minute: the next occurrence of that wall-clock time in each zone.
    const target = new Date(Math.floor((Date.now() + 3 * 3_600_000) / 60_000) * 60_000);
    const hhmm = (offsetMin: number) => new Date(target.getTime() + offsetMin * 60_000).toISOString().slice(11, 16);
    const indiaJob = await sys.client.publishPushJob(job({ userId: india.userId, deliverAt: { localTime: hhmm(330) } }));
    const marsJob = await sys.client.publishPushJob(job({ userId: mars.userId, deliverAt: { localTime: hhmm(0) } }));
    const due = async (jobId: string) => (await waitFor(`stored ${jobId}`, async () => (await storedRows(jobId))[0]))?.due_at;
    expect(await due(indiaJob.id)).toEqual(target);
    expect(await due(marsJob.id)).toEqual(target);
    expect(await metric(sys.service('demuxer'), 'herald_demuxer_timezone_fallback_total', { app: DEMO_APP.id })).toBe(1);
  });

  it('two deschedulers over 2,000 due pushes release each exactly once', async () => {
    await second.start();
    const first = sys.service('apns-descheduler');
    const before = await released(first);
    const { tokens } = await scheduleDirect(sys, ROWS, (i) => new Date(Date.now() + 1_500 + (i % 10)));
    await waitFor('2,000 deliveries', async () => (await countsByToken(tokens)).size === ROWS, { timeoutMs: 60_000 });
    const [a, b] = await waitFor('release counts', async () => {
      const counts = [(await released(first)) - before, await released(second)] as const;
      return counts[0] + counts[1] >= ROWS && counts;
    });
    // Both took part, and together they released each stored row once.
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
    expect(a + b).toBe(ROWS);
    expect([...(await countsByToken(tokens)).values()].filter((n) => n !== 1)).toEqual([]);
    await second.stop('SIGTERM');
  });

  it('a descheduler killed with SIGKILL mid-stream loses nothing; its restart releases the rest once each', async () => {
    const descheduler = sys.service('apns-descheduler');
    const start = Date.now() + 1_000;
    const { tokens, jobId } = await scheduleDirect(sys, ROWS, (i) => new Date(start + Math.floor(i * 1.5))); // due over 3 s
    const remaining = async () => (await storedRows(jobId)).length;
    await waitFor('half released', async () => (await remaining()) < ROWS / 2, { timeoutMs: 20_000, intervalMs: 10 });
    expect((await descheduler.stop('SIGKILL')).signal).toBe('SIGKILL');
    const left = await remaining();
    expect(left).toBeGreaterThan(0);
    await descheduler.start();
    await waitFor('all deliveries', async () => (await countsByToken(tokens)).size === ROWS, { timeoutMs: 60_000 });
    expect([...(await countsByToken(tokens)).values()].filter((n) => n !== 1)).toEqual([]);
    expect(await remaining()).toBe(0);
  });

  it('cancel removes a job’s stored pushes; `herald scheduled` shows what waits per hour', async () => {
    const devices: Device[] = Array.from({ length: 3 }, () => ({ userId: uniqueUser('cancel'), platform: 'apns' as const, token: apnsToken() }));
    await registerDevices(sys, devices);
    const later = await sys.client.publishPushJob(job({ userIds: devices.map((d) => d.userId), deliverAt: { at: new Date(Date.now() + 600_000).toISOString() } }));
    await waitFor('3 stored pushes', async () => (await storedRows(later.id)).length === 3);
    const listed = JSON.parse(await cli(sys, ['scheduled', '--platform', 'apns', '--json'])) as Array<{ platform: string; count: number }>;
    expect(listed.reduce((sum, r) => sum + r.count, 0)).toBeGreaterThanOrEqual(3);
    expect(await cli(sys, ['cancel', '--job', later.id])).toBe(`job ${later.id}: 3 scheduled pushes cancelled\n`);
    expect(await storedRows(later.id)).toEqual([]);
    expect(await cli(sys, ['cancel', '--job', later.id])).toBe(`job ${later.id}: 0 scheduled pushes cancelled\n`);
    // A job Herald does not have (published straight to RabbitMQ and not yet demuxed looks the same): not reported as cancelled.
    for (const args of [['cancel', '--job', 'no-such-job'], ['job', 'cancel', 'no-such-job']]) {
      const unknown = await runHerald({ DATABASE_URL: sys.database.url, DATABASE_SCHEMA: sys.database.schema }, ...args);
      expect(unknown).toEqual({ code: 1, stdout: '', stderr: 'no job "no-such-job" to cancel: Herald does not have it (not yet demuxed, or never published); nothing was cancelled\n' });
    }
  });

  it('rejects impossible times, malformed jitter, far-future dates and a job that would expire before it is due at the client', async () => {
    const bad = [{ localTime: '25:00' }, { localTime: '09:00', jitter: 'PT30X' }, { localTime: '09:00', date: '2099-01-01' }];
    for (const deliverAt of bad) {
      await expect(sys.client.publishPushJob(job({ userId: 'u', deliverAt }))).rejects.toThrow(/deliverAt/);
    }
    // One that would expire before it is due: its ttl counts from acceptance.
    const tomorrow = { at: new Date(Date.now() + 86_400_000).toISOString() };
    await expect(sys.client.publishPushJob(job({ userId: 'u', deliverAt: tomorrow, ttl: 3600 }))).rejects.toThrow(/ttl: the job expires at .* before it is due/);
  });

  it('parks an impossible local time (schema), a date beyond the horizon and a job that would expire before it is due (bad-schedule) with reasons', async () => {
    const publishRaw = (body: object) => raw.publisher.publish({ exchange: Exchanges.jobs, routingKey: Queues.jobs, body });
    await publishRaw({ id: 'sched-25h', app: DEMO_APP.id, userId: 'u', category: 'c', content: { title: 't' }, deliverAt: { localTime: '25:00' } });
    await publishRaw({ id: 'sched-far', app: DEMO_APP.id, userId: 'u', category: 'c', content: { title: 't' }, deliverAt: { at: '2099-01-01T09:00:00Z' } });
    await publishRaw({ id: 'sched-short', app: DEMO_APP.id, userId: 'u', category: 'c', content: { title: 't' }, deliverAt: { at: new Date(Date.now() + 86_400_000).toISOString() }, ttl: 0 });
    const parked = (id: string) =>
      waitFor(`parked ${id}`, async () => (await peekMessages(sys.vhost.name, parkedQueueFor(Queues.jobs), 100)).find((m) => m.payload.includes(id)));
    expect(String((await parked('sched-25h')).properties.headers?.[Headers.parkedReason])).toMatch(/deliverAt\.localTime/);
    expect(String((await parked('sched-far')).properties.headers?.[Headers.parkedReason])).toMatch(/more than 366 days ahead/);
    expect(await metric(sys.service('demuxer'), 'herald_messages_parked_total', { queue: Queues.jobs, code: 'schema' })).toBe(1);
    expect(String((await parked('sched-short')).properties.headers?.[Headers.parkedReason])).toMatch(/^ttl: the job expires at .* before it is due/);
    expect(await metric(sys.service('demuxer'), 'herald_messages_parked_total', { queue: Queues.jobs, code: 'bad-schedule' })).toBe(2);
    expect(sys.service('demuxer').running).toBe(true);
  });
});

/** Store pushes straight into the schedule (as the demuxer would), one device token each. */
async function scheduleDirect(sys: System, n: number, dueAt: (i: number) => Date): Promise<{ tokens: Set<string>; jobId: string }> {
  const jobId = randomUUID();
  const rows: ScheduledPushInput[] = Array.from({ length: n }, (_, i) => {
    const push: DevicePush = {
      version: 1,
      pushId: derivePushId(jobId, String(i)),
      jobId,
      // No devices id (the claim looks none up): these devices exist only in the schedule.
      deviceId: `bulk-${i}`,
      app: DEMO_APP.id,
      platform: 'apns',
      token: apnsToken(),
      userId: `bulk-${i}`,
      content: { title: 'bulk' },
      priority: 'high',
      acceptedAt: new Date().toISOString(),
    };
    return { dueAt: dueAt(i), push };
  });
  await sys.database.db.scheduled.schedule(rows);
  return { tokens: new Set(rows.map((r) => r.push.token)), jobId };
}

/** Run the herald CLI against this system's database; resolves with its stdout. */
async function cli(sys: System, args: string[]): Promise<string> {
  const r = await runHerald({ DATABASE_URL: sys.database.url, DATABASE_SCHEMA: sys.database.schema }, ...args);
  if (r.code !== 0) throw new Error(`herald ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}
