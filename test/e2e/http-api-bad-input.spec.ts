import { randomUUID } from 'node:crypto';
import { Queues } from '@herald/contracts';
import { peekMessages } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fcmToken } from '../support/fixtures.ts';
import { API_TEST_ENV, admin, apiUrl, call, teamKey } from '../support/http-api.ts';
import { startSystem, type System } from '../support/system.ts';

const BODY_LIMIT = 262_144;

/** Every bad request is a clear 4xx naming the problem, and nothing reaches RabbitMQ. */
describe('HTTP API bad input', () => {
  let sys: System;
  let key: string;
  let anyAppKey: string;

  const job = (extra: Record<string, unknown> = {}) => ({ id: randomUUID(), app: 'demo', userId: 'u1', category: 'social', content: { title: 'hi' }, ...extra });
  const published = async (queue: string = Queues.jobs) => (await peekMessages(sys.vhost.name, queue, 5000)).length;

  async function refused(req: Parameters<typeof call>, status: number, code: string, message: RegExp, queue: string = Queues.jobs) {
    const before = await published(queue);
    const r = await call<{ error: { code: string; message: string; issues?: Array<{ path: string }> } }>(...req);
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(r.body.error.code).toBe(code);
    expect(r.body.error.message).toMatch(message);
    expect(await published(queue)).toBe(before);
    return r.body.error;
  }

  beforeAll(async () => {
    // Only the API runs: whatever it publishes stays in push.jobs / push.registrations to be counted.
    sys = await startSystem({ only: ['api'], env: { ...API_TEST_ENV, API_BODY_LIMIT_BYTES: String(BODY_LIMIT) } });
    expect((await admin(sys, 'POST', '/admin/apps', { id: 'other', apnsTopic: 'com.example.other' })).status).toBe(201);
    expect((await admin(sys, 'POST', '/admin/apps', { id: 'sleepy', apnsTopic: 'com.example.sleepy', enabled: false })).status).toBe(201);
    key = await teamKey(sys, 'team-demo', ['demo', 'sleepy']);
    anyAppKey = await teamKey(sys, 'team-ops', ['*']);
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it('publishes a good job (so the "nothing published" checks can fail)', async () => {
    const before = await published();
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: job() })).status).toBe(202);
    expect(await published()).toBe(before + 1);
  });

  it('refuses a request without a key or with a wrong one (401)', async () => {
    await refused([sys, 'POST', '/v1/jobs', { body: job() }], 401, 'unauthorized', /API key is required/);
    await refused([sys, 'POST', '/v1/jobs', { key: 'hk_nope', body: job() }], 401, 'unauthorized', /unknown or revoked/);
  });

  it('refuses an unknown app (422), naming the field (jobs.N.app in a batch)', async () => {
    const one = await refused([sys, 'POST', '/v1/jobs', { key: anyAppKey, body: job({ app: 'no-such-app' }) }], 422, 'unknown-app', /^app: unknown app "no-such-app"$/);
    expect(one.issues).toEqual([{ path: 'app', message: 'unknown app "no-such-app"' }]);
    const batch = await refused([sys, 'POST', '/v1/jobs:batch', { key: anyAppKey, body: { jobs: [job(), job({ app: 'no-such-app' })] } }], 422, 'unknown-app', /^jobs\.1\.app: /);
    expect(batch.issues?.map((i) => i.path)).toEqual(['jobs.1.app']);
  });

  // Fastify answered these in its own shape ({"error": "Bad Request", "code": "FST_…"}), whose error is a string.
  it('answers a malformed path or an over-long path parameter in the API error shape', async () => {
    const bad = await call<{ error: { code: string; message: string } }>(sys, 'GET', '/v1/jobs/%E0%A4%A', { key });
    expect([bad.status, bad.body.error.code]).toEqual([400, 'bad-url']);
    const long = await call<{ error: { code: string; message: string } }>(sys, 'GET', `/v1/jobs/${'j'.repeat(250)}`, { key });
    expect([long.status, long.body.error.code]).toEqual([414, 'param-too-long']);
  });

  it('refuses a disabled app (422)', async () => {
    await refused([sys, 'POST', '/v1/jobs', { key, body: job({ app: 'sleepy' }) }], 422, 'app-disabled', /app "sleepy" is disabled/);
    const r = await admin(sys, 'POST', '/admin/apps/sleepy/disable');
    expect(r.body['enabled']).toBe(false);
    // A register and a logout go through (state, not sends): the device must not stay its user's while the app is disabled.
    expect((await call(sys, 'POST', '/v1/devices', { key, body: { app: 'sleepy', platform: 'fcm', token: fcmToken(), userId: 'u1' } })).status).toBe(202);
    expect((await call(sys, 'DELETE', '/v1/devices', { key, body: { app: 'sleepy', platform: 'fcm', token: fcmToken() } })).status).toBe(202);
  });

  it('refuses an app the key may not send for (403), in a batch too', async () => {
    await refused([sys, 'POST', '/v1/jobs', { key, body: job({ app: 'other' }) }], 403, 'app-not-allowed', /may not act for app "other"/);
    const batch = await refused([sys, 'POST', '/v1/jobs:batch', { key, body: { jobs: [job(), job({ app: 'other' })] } }], 403, 'app-not-allowed', /^jobs\.1\.app: .*"other"/);
    expect(batch.issues?.map((i) => i.path)).toEqual(['jobs.1.app']);
    const device = { app: 'other', platform: 'fcm', token: fcmToken(), userId: 'u1' };
    await refused([sys, 'POST', '/v1/devices', { key, body: device }], 403, 'app-not-allowed', /"other"/, Queues.registrations);
  });

  it('refuses a body over the limit (413)', async () => {
    const big = job({ content: { title: 'x'.repeat(BODY_LIMIT) } });
    await refused([sys, 'POST', '/v1/jobs', { key, body: big }], 413, 'body-too-large', new RegExp(`limit of ${BODY_LIMIT} bytes`));
  });

  it('refuses a batch over 1,000 jobs (400), naming the limit', async () => {
    const jobs = Array.from({ length: 1001 }, (_, i) => ({ id: `b${i}`, app: 'demo', userId: 'u', category: 'c', content: { title: 't' } }));
    const error = await refused([sys, 'POST', '/v1/jobs:batch', { key, body: { jobs } }], 400, 'batch-too-large', /at most 1000 jobs, this one has 1001/);
    expect(error.issues?.[0]?.path).toBe('jobs');
  });

  it('refuses a body that is not JSON by content type (415)', async () => {
    await refused([sys, 'POST', '/v1/jobs', { key, body: 'id=1&app=demo', contentType: 'application/x-www-form-urlencoded' }], 415, 'unsupported-media-type', /content-type: application\/json/);
    await refused([sys, 'POST', '/v1/jobs', { key, body: JSON.stringify(job()), contentType: 'text/plain' }], 415, 'unsupported-media-type', /must be JSON/);
  });

  it('refuses malformed JSON (400)', async () => {
    await refused([sys, 'POST', '/v1/jobs', { key, body: '{"id": "broken", ' }], 400, 'malformed-json', /not valid JSON/);
    await refused([sys, 'POST', '/v1/jobs', { key, body: '' }], 400, 'malformed-json', /empty/);
  });

  it('refuses a body that is not UTF-8 (400), whatever charset it names: a Latin-1 "é" is not taken as U+FFFD', async () => {
    const latin1 = Buffer.from(JSON.stringify(job({ userId: 'caf\u00e9', content: { title: 'Caf\u00e9 ouvert' } })), 'latin1');
    await refused([sys, 'POST', '/v1/jobs', { key, body: latin1 }], 400, 'malformed-json', /not valid UTF-8/);
    await refused([sys, 'POST', '/v1/jobs', { key, body: latin1, contentType: 'application/json; charset=iso-8859-1' }], 400, 'malformed-json', /not valid UTF-8/);
    // The same job in UTF-8 is accepted, its é intact.
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: Buffer.from(latin1.toString('latin1'), 'utf8') })).status).toBe(202);
  });

  it("refuses a job the PushJob contract rejects (400), naming each failing field's path", async () => {
    const error = await refused([sys, 'POST', '/v1/jobs', { key, body: job({ content: { title: 'hi', badge: 'three' }, surprise: 1 }) }], 400, 'invalid-request', /content\.badge/);
    expect(error.issues?.map((i) => i.path)).toEqual(expect.arrayContaining(['content.badge', '(root)']));
    const inBatch = await refused([sys, 'POST', '/v1/jobs:batch', { key, body: { jobs: [job(), job({ userId: undefined })] } }], 400, 'invalid-request', /jobs\.1\.userId/);
    expect(inBatch.issues?.[0]?.path).toBe('jobs.1.userId');
    await refused([sys, 'POST', '/v1/devices', { key, body: { app: 'demo', platform: 'blackberry', token: 't', userId: 'u' } }], 400, 'invalid-request', /platform/, Queues.registrations);
  });

  it('refuses what PostgreSQL cannot store (400), naming the field: a NUL character, half a surrogate pair, a UTC offset beyond ±15:59', async () => {
    await refused([sys, 'POST', '/v1/jobs', { key, body: job({ content: { title: 'hi\u0000' } }) }], 400, 'invalid-request', /content\.title: must not contain the NUL character/);
    // JSON carries it as the escape "\ud83d", which JSON.parse turns into half a pair.
    await refused([sys, 'POST', '/v1/jobs', { key, body: job({ content: { title: 'hi', body: 'a \ud83d b' } }) }], 400, 'invalid-request', /content\.body: must be well-formed Unicode/);
    await refused([sys, 'POST', '/v1/jobs', { key, body: job({ expiresAt: '2030-01-01T00:00:00+16:00' }) }], 400, 'invalid-request', /expiresAt: the UTC offset must be at most ±15:59/);
    const device = { app: 'demo', platform: 'apns', token: 'ab'.repeat(32), userId: 'u' };
    await refused([sys, 'POST', '/v1/devices', { key, body: { ...device, eventAt: '2026-11-29T12:00:00+16:00' } }], 400, 'invalid-request', /eventAt: the UTC offset must be at most ±15:59/, Queues.registrations);
    await refused([sys, 'POST', '/v1/devices', { key, body: { ...device, userId: 'u\udc00' } }], 400, 'invalid-request', /userId: must be well-formed Unicode/, Queues.registrations);
    expect((await call(sys, 'POST', '/v1/devices', { key, body: { ...device, eventAt: '2026-11-29T12:00:00+14:00' } })).status).toBe(202);
  });

  it('refuses a register whose previousToken is not a token of its platform, or is the token itself (400 naming previousToken)', async () => {
    const device = { app: 'demo', platform: 'apns', token: 'ab'.repeat(32), userId: 'u' };
    const bad = await refused([sys, 'POST', '/v1/devices', { key, body: { ...device, previousToken: 'not a token' } }], 400, 'invalid-request', /^previousToken: previousToken is not an APNs device token/, Queues.registrations);
    expect(bad.issues?.map((i) => i.path)).toEqual(['previousToken']);
    // APNs hex in either case is one token.
    await refused([sys, 'POST', '/v1/devices', { key, body: { ...device, previousToken: 'AB'.repeat(32) } }], 400, 'invalid-request', /^previousToken: previousToken is the token itself/, Queues.registrations);
    expect((await call(sys, 'POST', '/v1/devices', { key, body: { ...device, previousToken: 'cd'.repeat(32) } })).status).toBe(202);
  });

  it('refuses a scheduled job that would expire before it is due (400 naming ttl or expiresAt): nothing would be delivered', async () => {
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    await refused([sys, 'POST', '/v1/jobs', { key, body: job({ deliverAt: { at: tomorrow }, ttl: 3600 }) }], 400, 'invalid-request', /^ttl: the job expires at .* before it is due/);
    await refused([sys, 'POST', '/v1/jobs', { key, body: job({ deliverAt: { at: tomorrow }, expiresAt: new Date(Date.now() + 3_600_000).toISOString() }) }], 400, 'invalid-request', /^expiresAt: /);
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: job({ deliverAt: { at: tomorrow }, ttl: 2 * 86_400 }) })).status).toBe(202);
  });

  it('refuses a job id already used by another app (409)', async () => {
    const first = job();
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: first })).status).toBe(202);
    const clash = await refused([sys, 'POST', '/v1/jobs', { key: anyAppKey, body: { ...first, app: 'other' } }], 409, 'job-id-conflict', /^id: job id ".+" is already used by another app/);
    expect(clash.issues).toEqual([expect.objectContaining({ path: 'id' })]);
    const batch = await refused([sys, 'POST', '/v1/jobs:batch', { key: anyAppKey, body: { jobs: [job(), { ...first, app: 'other' }] } }], 409, 'job-id-conflict', /^jobs\.1\.id: /);
    expect(batch.issues).toEqual([expect.objectContaining({ path: 'jobs.1.id' })]);
  });

  // Before, the repost was answered 200 duplicate (or 202 after a 503), published again, and every push recorded cancelled: nothing sent, nothing said.
  it('refuses a cancelled job posted again (409 job-cancelled naming id), in a batch too', async () => {
    const first = job({ deliverAt: { at: new Date(Date.now() + 3_600_000).toISOString() } });
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: first })).status).toBe(202);
    expect((await call(sys, 'DELETE', `/v1/jobs/${first.id}`, { key })).status).toBe(200);
    await refused([sys, 'POST', '/v1/jobs', { key, body: first }], 409, 'job-cancelled', /^id: job id ".+" was cancelled \(DELETE \/v1\/jobs\/:id\) and is not sent again: a new job needs a new id$/);
    const second = job({ deliverAt: { at: new Date(Date.now() + 3_600_000).toISOString() } });
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: second })).status).toBe(202);
    expect((await call(sys, 'DELETE', `/v1/jobs/${second.id}`, { key })).status).toBe(200);
    // Every cancelled job named: the caller drops them and reposts the rest in one more request.
    const batch = await refused([sys, 'POST', '/v1/jobs:batch', { key, body: { jobs: [job(), first, second] } }], 409, 'job-cancelled', /^jobs\.1\.id: .* \(and 1 more cancelled job: see issues\)$/);
    expect(batch.issues?.map((i) => i.path)).toEqual(['jobs.1.id', 'jobs.2.id']);
  });

  // A client with a session-wide JSON content type sends it on a DELETE too: before, the empty body was refused 400 (415 for text/plain) and the job not cancelled.
  it('cancels a job whatever content type the body-less DELETE names', async () => {
    for (const contentType of ['application/json', 'text/plain']) {
      const later = job({ deliverAt: { at: new Date(Date.now() + 3_600_000).toISOString() } });
      expect((await call(sys, 'POST', '/v1/jobs', { key, body: later })).status).toBe(202);
      const res = await fetch(`${apiUrl(sys)}/v1/jobs/${later.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}`, 'content-type': contentType } });
      expect([contentType, res.status, await res.text()]).toEqual([contentType, 200, expect.stringContaining('"cancelled"')]);
    }
  });

  it('refuses a job id accepted before with other content (409 naming id); the same job again, keys in another order and traced, is a duplicate', async () => {
    // Before, the second content was published beside the first (before its confirm), each device
    // getting whichever copy a pusher claimed first, or answered as a duplicate without a word.
    const first = job({ content: { title: 'Sale', body: 'Shoes -20%', data: { a: '1', b: '2' } } });
    expect((await call(sys, 'POST', '/v1/jobs', { key, body: first })).status).toBe(202);
    const edited = { ...first, content: { title: 'Sale', body: 'Shoes -30%', data: { a: '1', b: '2' } } };
    await refused([sys, 'POST', '/v1/jobs', { key, body: edited }], 409, 'job-id-reused', /^id: job id ".+" was accepted before with other content/);
    const batch = await refused([sys, 'POST', '/v1/jobs:batch', { key, body: { jobs: [job(), { ...first, priority: 'normal' }] } }], 409, 'job-id-reused', /^jobs\.1\.id: /);
    expect(batch.issues).toEqual([expect.objectContaining({ path: 'jobs.1.id' })]);
    const again = { ...first, content: { data: { b: '2', a: '1' }, body: 'Shoes -20%', title: 'Sale' }, trace: true, acceptedAt: new Date().toISOString() };
    expect(await call(sys, 'POST', '/v1/jobs', { key, body: again })).toMatchObject({ status: 200, body: { id: first.id, duplicate: true } });
  });

  it('guards the admin routes with the admin key', async () => {
    expect((await call(sys, 'POST', '/admin/apps', { key, body: { id: 'sneaky' } })).status).toBe(401);
    expect((await admin(sys, 'POST', '/admin/apps', { id: 'other' })).status).toBe(409);
  });
});
