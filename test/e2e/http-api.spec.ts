import { randomUUID } from 'node:crypto';
import { PushJob, Queues, parkedQueueFor } from '@herald/contracts';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { apnsToken, fcmToken, uniqueUser, type Device } from '../support/fixtures.ts';
import {
  API_TEST_ENV,
  admin,
  apnsTokenIdentity,
  call,
  createAppWithOwnCredentials,
  mintApnsKey,
  teamKey,
} from '../support/http-api.ts';
import { metric } from '../support/metrics.ts';
import { herald } from '../support/cli.ts';
import { delivered, injectFault, sandboxRecords } from '../support/sandbox-client.ts';
import { startSystem, type System } from '../support/system.ts';

type Creds = Awaited<ReturnType<typeof createAppWithOwnCredentials>>;

describe('HTTP API: two apps on both platforms, each through its own credentials', () => {
  let sys: System;
  let key: string;
  const creds = new Map<string, Creds>();
  const users = new Map<string, { user: string; devices: Device[] }>();

  const job = (app: string, extra: Record<string, unknown> = {}) => ({
    id: randomUUID(),
    app,
    userId: users.get(app)?.user,
    category: 'social',
    content: { title: `hello ${app}`, body: 'from the HTTP API' },
    ...extra,
  });

  async function registered(app: string, user: string, count: number): Promise<void> {
    await waitFor(`${count} devices of ${app}`, async () => {
      const found = await sys.database.db.devices.findTargets([{ key: 'k', app, userIds: [user], category: '__none__' }], new Date());
      return (found.get('k') ?? []).length === count;
    });
  }

  beforeAll(async () => {
    sys = await startSystem({ env: API_TEST_ENV });
    for (const app of ['alpha', 'beta']) creds.set(app, await createAppWithOwnCredentials(sys, app));
    key = await teamKey(sys, 'team-a', ['alpha', 'beta']);
    for (const app of ['alpha', 'beta']) {
      const user = uniqueUser(app);
      const devices: Device[] = [
        { userId: user, platform: 'apns', token: apnsToken() },
        { userId: user, platform: 'fcm', token: fcmToken() },
      ];
      for (const d of devices) {
        const r = await call(sys, 'POST', '/v1/devices', { key, body: { app, platform: d.platform, token: d.token, userId: user, timezone: 'Europe/Berlin' } });
        expect(r.status).toBe(202);
      }
      await registered(app, user, 2);
      users.set(app, { user, devices });
    }
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it("delivers each app's pushes with that app's APNs key and team and its FCM project", async () => {
    for (const app of ['alpha', 'beta']) {
      const r = await call(sys, 'POST', '/v1/jobs', { key, body: job(app) });
      expect(r).toMatchObject({ status: 202, body: { duplicate: false } });
    }
    for (const app of ['alpha', 'beta']) {
      const c = creds.get(app) as Creds;
      const [apnsDevice, fcmDevice] = users.get(app)?.devices ?? [];
      const [apns] = await waitFor(`${app} apns push`, async () => {
        const got = await delivered(sys.sandbox, { token: apnsDevice?.token ?? '' });
        return got.length > 0 && got;
      });
      expect(apnsTokenIdentity(apns?.headers['authorization'])).toEqual({ keyId: c.apns.keyId, teamId: c.apns.teamId });
      expect(apns?.headers['apns-topic']).toBe(`com.example.${app}`);
      const [fcm] = await waitFor(`${app} fcm push`, async () => {
        const got = await delivered(sys.sandbox, { token: fcmDevice?.token ?? '' });
        return got.length > 0 && got;
      });
      expect(fcm?.path).toBe(`/v1/projects/${c.fcm.projectId}/messages:send`);
    }
    expect(creds.get('alpha')?.apns.keyId).not.toBe(creds.get('beta')?.apns.keyId);
  });

  it('reports job status: targeted and delivered', async () => {
    const posted = job('alpha');
    await call(sys, 'POST', '/v1/jobs', { key, body: posted });
    const status = await waitFor('job delivered', async () => {
      const r = await call(sys, 'GET', `/v1/jobs/${posted.id}`, { key });
      return r.status === 200 && r.body['delivered'] === 2 && r.body;
    });
    expect(status).toMatchObject({ id: posted.id, app: 'alpha', published: true, demuxOutcome: 'fanned-out', targeted: 2, delivered: 2, invalid: 0, parked: 0, scheduled: 0, state: 'done' });
    expect((await call(sys, 'GET', `/v1/jobs/${randomUUID()}`, { key })).status).toBe(404);
    // Cancelled once done: nothing to cancel, and it stays done (before, it read "cancelled" with every push delivered).
    expect((await call(sys, 'DELETE', `/v1/jobs/${posted.id}`, { key })).body).toEqual({ id: posted.id, cancelled: 0 });
    expect((await call(sys, 'GET', `/v1/jobs/${posted.id}`, { key })).body).toMatchObject({ state: 'done', delivered: 2 });
    // The CLI answers the same.
    expect((await herald({ ...sys.env, LOG_LEVEL: 'warn' }, 'job', 'cancel', posted.id)).stdout).toBe(`job ${posted.id}: already done, nothing parked: nothing to cancel\n`);
    expect((await call(sys, 'GET', `/v1/jobs/${posted.id}`, { key })).body).toMatchObject({ state: 'done' });
  });

  it("lists a job's device pushes to an operator (herald job pushes), a page at a time, as the API does", async () => {
    const posted = job('alpha');
    await call(sys, 'POST', '/v1/jobs', { key, body: posted });
    await waitFor('job delivered', async () => (await call(sys, 'GET', `/v1/jobs/${posted.id}`, { key })).body['delivered'] === 2);
    const env = { ...sys.env, LOG_LEVEL: 'warn' };
    const api = (await call(sys, 'GET', `/v1/jobs/${posted.id}/pushes`, { key })).body['pushes'] as Array<{ pushId: string; platform: string; deviceId: string; token: string }>;
    expect(api).toHaveLength(2);
    const all = await herald(env, 'job', 'pushes', posted.id);
    expect(all.stdout.trim().split('\n')).toEqual(
      api.map((p) => expect.stringMatching(new RegExp(`^${p.pushId}  ${p.platform} device ${p.deviceId} \\(${p.token.replaceAll('*', '\\*')}\\)  delivered \\[provider id [^\\]]+\\]  \\d{4}-`))),
    );
    const first = await herald(env, 'job', 'pushes', posted.id, '--limit', '1');
    expect(first.stdout).toMatch(new RegExp(`^${api[0]?.pushId} .*\nmore: herald job pushes ${posted.id} --after ${api[0]?.pushId} --limit 1\n$`));
    const second = await herald(env, 'job', 'pushes', posted.id, '--limit', '1', '--after', api[0]?.pushId ?? '', '--json');
    expect(JSON.parse(second.stdout)).toMatchObject({ pushes: [{ pushId: api[1]?.pushId, outcome: 'delivered' }] });
    // A full last page points on; the page after it says there is no more.
    const past = await herald(env, 'job', 'pushes', posted.id, '--after', api[1]?.pushId ?? '');
    expect(past.stdout).toBe(`job ${posted.id}: no more pushes after ${api[1]?.pushId}\n`);
    const refused = await herald(env, 'job', 'pushes', posted.id, '--limit', '0');
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining('--limit')]);
    const unknown = await herald(env, 'job', 'pushes', 'no-such-job');
    expect([unknown.code, unknown.stdout, unknown.stderr]).toEqual([1, '', 'no job "no-such-job"\n']);
  });

  it('accepts a job id once: the second post is a duplicate and nothing more is sent', async () => {
    const posted = job('beta');
    const token = users.get('beta')?.devices[0]?.token ?? '';
    const before = (await delivered(sys.sandbox, { token })).length;
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: posted })).status).toBe(202);
    const again = await call(sys, 'POST', '/v1/jobs', { key, body: posted });
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: { id: posted.id, duplicate: true } });
    await waitFor('one delivery', async () => (await delivered(sys.sandbox, { token })).length === before + 1);
    const batch = await call(sys, 'POST', '/v1/jobs:batch', { key, body: { jobs: [posted, job('beta')] } });
    expect(batch.status).toBe(202);
    expect((batch.body['results'] as Array<{ duplicate: boolean }>).map((r) => r.duplicate)).toEqual([true, false]);
    await waitFor('batch delivered', async () => (await delivered(sys.sandbox, { token })).length === before + 2);
    await new Promise((r) => setTimeout(r, 500));
    expect((await delivered(sys.sandbox, { token })).length).toBe(before + 2);
  });

  it('counts and times every request, and tells the caller where a publish spent its time', async () => {
    const api = sys.service('api');
    const count = (labels: Record<string, string>) => metric(api, 'herald_api_requests_total', labels);
    const accepted = { method: 'POST', route: '/v1/jobs', status: '202' };
    const [acceptedBefore, duplicatesBefore, unmatchedBefore, confirmsBefore] = await Promise.all([
      count(accepted),
      count({ ...accepted, status: '200' }),
      count({ method: 'GET', route: 'unmatched', status: '404' }),
      metric(api, 'herald_api_publish_stage_seconds_count', { stage: 'confirm' }),
    ]);
    const posted = job('alpha');
    const first = await call(sys, 'POST', '/v1/jobs', { key, body: posted });
    expect(first.status).toBe(202);
    // Recording the id in PostgreSQL, RabbitMQ's confirm, and the whole (Server-Timing, in ms).
    const timing = first.headers.get('server-timing') ?? '';
    expect(timing).toMatch(/^record;dur=\d+\.\d{2}, confirm;dur=\d+\.\d{2}, total;dur=\d+\.\d{2}$/);
    const [record, confirm, total] = [...timing.matchAll(/dur=([\d.]+)/g)].map((m) => Number(m[1]));
    expect(total).toBeGreaterThanOrEqual((record ?? 0) + (confirm ?? 0) - 0.02);
    const again = await call(sys, 'POST', '/v1/jobs', { key, body: posted });
    expect(again.status).toBe(200);
    expect(again.headers.get('server-timing')).toMatch(/^record;dur=\d+\.\d{2}, total;dur=\d+\.\d{2}$/); // a duplicate publishes nothing
    expect((await call(sys, 'GET', `/no/such/${randomUUID()}`, { key })).status).toBe(404);
    expect(await count(accepted)).toBe(acceptedBefore + 1);
    expect(await count({ ...accepted, status: '200' })).toBe(duplicatesBefore + 1);
    // Unknown paths share one label, so scanning random URLs cannot grow the series.
    expect(await count({ method: 'GET', route: 'unmatched', status: '404' })).toBe(unmatchedBefore + 1);
    expect(await metric(api, 'herald_api_publish_stage_seconds_count', { stage: 'confirm' })).toBe(confirmsBefore + 1);
    expect(await metric(api, 'herald_api_request_duration_seconds_count', { method: 'POST', route: '/v1/jobs' })).toBeGreaterThanOrEqual(2);
  });

  it('cancels a scheduled job', async () => {
    const posted = job('alpha', { deliverAt: { at: new Date(Date.now() + 3_600_000).toISOString() } });
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: posted })).status).toBe(202);
    await waitFor('2 scheduled', async () => (await call(sys, 'GET', `/v1/jobs/${posted.id}`, { key })).body['scheduled'] === 2);
    const cancelled = await call(sys, 'DELETE', `/v1/jobs/${posted.id}`, { key });
    expect({ status: cancelled.status, body: cancelled.body }).toEqual({ status: 200, body: { id: posted.id, cancelled: 2 } });
    expect((await call(sys, 'GET', `/v1/jobs/${posted.id}`, { key })).body).toMatchObject({ scheduled: 0, targeted: 2, delivered: 0 });
  });

  it('a job cancelled while it waits for the demuxer ends with every push cancelled: none sent, none left scheduled, the status adding up', async () => {
    const demuxer = sys.service('demuxer');
    const tokens = users.get('alpha')?.devices.map((d) => d.token) ?? [];
    const sentBefore = await Promise.all(tokens.map(async (token) => (await delivered(sys.sandbox, { token })).length));
    // push.jobs backed up: nobody takes the jobs until both are cancelled.
    await demuxer.stop('SIGTERM');
    const later = job('alpha', { deliverAt: { at: new Date(Date.now() + 30 * 86_400_000).toISOString() } });
    const now = job('alpha');
    try {
      for (const posted of [later, now]) {
        expect((await call(sys, 'POST', '/v1/jobs', { key, body: posted })).status).toBe(202);
        const cancelled = await call(sys, 'DELETE', `/v1/jobs/${posted.id}`, { key });
        expect({ status: cancelled.status, body: cancelled.body }).toEqual({ status: 200, body: { id: posted.id, cancelled: 0 } });
      }
    } finally {
      await demuxer.start();
    }
    for (const posted of [later, now]) {
      const status = await waitFor(`job ${posted.id} settled`, async () => {
        const r = await call(sys, 'GET', `/v1/jobs/${posted.id}`, { key });
        return r.body['targeted'] === 2 && r.body['inFlight'] === 0 && r.body;
      });
      expect(status).toMatchObject({ state: 'cancelled', targeted: 2, delivered: 0, invalid: 0, failed: 0, parked: 0, scheduled: 0, inFlight: 0 });
      expect(status['skipped']).toEqual({ optedOut: 0, muted: 0, noDevice: 0, expired: 0, cancelled: 2 });
      const pushes = (await call(sys, 'GET', `/v1/jobs/${posted.id}/pushes`, { key })).body['pushes'] as Array<{ outcome: string }>;
      expect(pushes.map((p) => p.outcome)).toEqual(['cancelled', 'cancelled']);
    }
    expect(await sys.database.db.kysely.selectFrom('scheduled_pushes').select('push_id').where('job_id', 'in', [later.id, now.id]).execute()).toEqual([]);
    expect(await Promise.all(tokens.map(async (token) => (await delivered(sys.sandbox, { token })).length))).toEqual(sentBefore);
    // The restarted demuxer took only these two: it published none of their pushes and stored none.
    expect(await metric(demuxer, 'herald_demuxer_jobs_total', { outcome: 'cancelled' })).toBe(2);
    expect(await metric(demuxer, 'herald_demuxer_device_pushes_total')).toBe(0);
    expect(await metric(demuxer, 'herald_demuxer_scheduled_pushes_total')).toBe(0);
  });

  it('rotates credentials without a restart: the next push uses the new key', async () => {
    const fresh = await mintApnsKey(sys.sandbox);
    const rotated = await admin(sys, 'PUT', '/admin/apps/alpha/credentials', {
      apns: { auth: 'token', keyPem: fresh.keyPem, keyId: fresh.keyId, teamId: fresh.teamId, endpoint: 'local' },
    });
    expect(rotated.status).toBe(200);
    expect(JSON.stringify(rotated.body)).not.toContain('PRIVATE KEY');
    const token = users.get('alpha')?.devices[0]?.token ?? '';
    const seen = (await sandboxRecords(sys.sandbox, { token })).length;
    await call(sys, 'POST', '/v1/jobs', { key, body: job('alpha') });
    const latest = await waitFor('push with the rotated key', async () => {
      const got = (await delivered(sys.sandbox, { token })).slice(seen);
      return got.length > 0 && got;
    });
    expect(apnsTokenIdentity(latest[0]?.headers['authorization'])).toEqual({ keyId: fresh.keyId, teamId: fresh.teamId });
  });

  it('stores credentials encrypted', async () => {
    const row = await sys.database.db.kysely.selectFrom('apps').select(['apns_secret', 'fcm_secret']).where('id', '=', 'beta').executeTakeFirstOrThrow();
    expect(row.apns_secret).toMatch(/^v1\./);
    expect(row.apns_secret).not.toContain('PRIVATE');
    expect(row.fcm_secret).not.toContain('ya29');
  });

  it("unregisters a device: later jobs no longer target it; one naming another user than the device's changes nothing", async () => {
    const { user, devices } = users.get('beta') ?? { user: '', devices: [] };
    const [apns, fcm] = devices as [Device, Device];
    // A sign-out of the phone's previous user (from that user's old list of tokens) leaves the device to its present one.
    expect((await call(sys, 'DELETE', '/v1/devices', { key, body: { app: 'beta', platform: 'apns', token: apns.token, userId: 'previous-owner' } })).status).toBe(202);
    expect((await call(sys, 'DELETE', '/v1/devices', { key, body: { app: 'beta', platform: 'fcm', token: fcm.token, userId: user } })).status).toBe(202);
    await registered('beta', user, 1);
    const left = await sys.database.db.devices.findTargets([{ key: 'k', app: 'beta', userIds: [user], category: '__none__' }], new Date());
    expect((left.get('k') ?? []).map((d) => d.token)).toEqual([apns.token]);
  });

  it('serves an OpenAPI document generated from the contract schemas', async () => {
    const doc = await call(sys, 'GET', '/openapi.json');
    expect(doc.status).toBe(200);
    const schemas = (doc.body['components'] as { schemas: Record<string, unknown> }).schemas;
    const pushJob = z.toJSONSchema(PushJob, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    delete pushJob['$schema'];
    expect(schemas['PushJob']).toEqual(pushJob);
    expect(Object.keys(doc.body['paths'] as object)).toEqual(expect.arrayContaining(['/v1/jobs', '/v1/jobs:batch', '/v1/jobs/{id}', '/v1/devices']));
  });

  it('cancels a done job whose push was parked, so a replay of the parked queue sends nothing', async () => {
    const user = uniqueUser('alpha');
    const token = apnsToken();
    expect((await call(sys, 'POST', '/v1/devices', { key, body: { app: 'alpha', platform: 'apns', token, userId: user } })).status).toBe(202);
    await registered('alpha', user, 1);
    await injectFault(sys.sandbox, { platform: 'apns', token, error: 'ServiceUnavailable' });
    const posted = job('alpha', { userId: user });
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: posted })).status).toBe(202);
    const parkedQueue = parkedQueueFor(Queues.apnsSend);
    const parked = await waitFor('the push parked', async () => (await peekMessages(sys.vhost.name, parkedQueue, 100)).find((m) => m.payload.includes(token)));
    await waitFor('the job done, its push parked', async () => {
      const r = await call(sys, 'GET', `/v1/jobs/${posted.id}`, { key });
      return r.body['state'] === 'done' && r.body['parked'] === 1;
    });
    // Before, a done job was left as it was: the replay below sent the push its publisher cancelled.
    expect((await call(sys, 'DELETE', `/v1/jobs/${posted.id}`, { key })).body).toEqual({ id: posted.id, cancelled: 0 });
    expect((await call(sys, 'GET', `/v1/jobs/${posted.id}`, { key })).body).toMatchObject({ state: 'cancelled', parked: 1 });
    await fetch(`${sys.sandbox.settings.control.url}/faults`, { method: 'DELETE' });
    const replay = await herald({ ...sys.env, LOG_LEVEL: 'warn' }, 'parked', 'replay', Queues.apnsSend, '--id', String(parked.properties.message_id));
    expect(replay.stdout).toMatch(/replayed 1 of/);
    // The replay marks its parked outcome replayed (in flight: the job reads cancelling) until the pusher drops the copy as cancelled.
    const after = await waitFor('the replayed push dropped as cancelled', async () => {
      const r = await call(sys, 'GET', `/v1/jobs/${posted.id}`, { key });
      return r.body['parked'] === 0 && r.body['state'] === 'cancelled' && r.body;
    });
    expect(after).toMatchObject({ state: 'cancelled', delivered: 0, skipped: expect.objectContaining({ cancelled: 1 }) });
    expect((await sandboxRecords(sys.sandbox, { token })).map((r) => r.status)).toEqual([503, 503, 503]);
  });
});
