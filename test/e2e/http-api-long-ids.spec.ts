import { MAX_JOB_ID_LENGTH, MAX_TOPIC_NAME_LENGTH } from '@herald/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, API_TEST_ENV, call, teamKey } from '../support/http-api.ts';
import { startSystem, type System } from '../support/system.ts';

/** An id or name of exactly `length` characters, made of `alphabet` from a random start. */
const ofLength = (length: number, alphabet: string): string => {
  const start = Math.floor(Math.random() * alphabet.length);
  return Array.from({ length }, (_, i) => alphabet[(start + i) % alphabet.length]).join('');
};

/** Whatever the contracts let a team create, the API's routes reach again: the longest job id, the longest topic name. */
describe('HTTP API: the longest ids the contracts allow', () => {
  let sys: System;
  let key: string;

  beforeAll(async () => {
    // Only the API runs: the job stays in push.jobs, its record in PostgreSQL.
    sys = await startSystem({ only: ['api'], env: API_TEST_ENV });
    key = await teamKey(sys, 'team-demo', ['demo']);
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it(`shows, lists the pushes of and cancels a job whose id has ${MAX_JOB_ID_LENGTH} characters`, async () => {
    // Printable ASCII, with the characters a client must percent-encode in a path among them.
    const id = ofLength(MAX_JOB_ID_LENGTH, 'abcXYZ0123456789-_.~/%?#:@!$&()*+,;=');
    const path = `/v1/jobs/${encodeURIComponent(id)}`;
    const posted = await call(sys, 'POST', '/v1/jobs', { key, body: { id, app: 'demo', userId: 'u1', category: 'social', content: { title: 'hi' } } });
    expect(posted.status, JSON.stringify(posted.body)).toBe(202);
    const status = await call(sys, 'GET', path, { key });
    expect(status.status, JSON.stringify(status.body)).toBe(200);
    expect(status.body).toMatchObject({ id, app: 'demo' });
    const pushes = await call(sys, 'GET', `${path}/pushes`, { key });
    expect(pushes.status, JSON.stringify(pushes.body)).toBe(200);
    expect(pushes.body['pushes']).toEqual([]);
    const cancelled = await call(sys, 'DELETE', path, { key });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body).toMatchObject({ id });
  });

  it(`shows, subscribes to and deletes a topic whose name has ${MAX_TOPIC_NAME_LENGTH} characters`, async () => {
    const name = ofLength(MAX_TOPIC_NAME_LENGTH, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.~-');
    expect((await call(sys, 'POST', '/v1/topics', { key, body: { name } })).status).toBe(201);
    const shown = await call(sys, 'GET', `/v1/topics/${name}`, { key });
    expect(shown.status, JSON.stringify(shown.body)).toBe(200);
    expect(shown.body).toMatchObject({ app: 'demo', name, subscribers: 0 });
    const subscribed = await call(sys, 'POST', `/v1/topics/${name}/subscriptions`, { key, body: { users: ['u1'], subscribed: true } });
    expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(200);
    expect(subscribed.body).toEqual({ applied: 1, stale: 0, subscribers: 1 });
    expect((await call(sys, 'DELETE', `/v1/topics/${name}`, { key })).status).toBe(204);
    expect((await call(sys, 'GET', `/v1/topics/${name}`, { key })).status).toBe(404);
  });

  it('answers a job id or app holding a NUL byte with a 4xx naming it, not a 500 (PostgreSQL cannot even compare it)', async () => {
    for (const [method, path] of [
      ['GET', '/v1/jobs/a%00b'],
      ['GET', '/v1/jobs/a%00b/pushes'],
      ['DELETE', '/v1/jobs/a%00b'],
    ] as const) {
      const answer = await call(sys, method, path, { key });
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(404);
      expect(answer.body).toMatchObject({ error: { code: 'unknown-job' } });
    }
    const everyApp = await teamKey(sys, 'team-all', ['*']);
    const vapid = await call(sys, 'GET', '/v1/web-push/vapid-public-key?app=a%00b', { key: everyApp });
    expect(vapid.status, JSON.stringify(vapid.body)).toBe(400);
    expect(JSON.stringify(vapid.body)).toContain('app');
    // Where a NUL reaches PostgreSQL before any check (an admin write's audit record), a 400 still.
    const patched = await admin(sys, 'PATCH', '/admin/apps/a%00b', { enabled: false });
    expect(patched.status, JSON.stringify(patched.body)).toBe(400);
    expect(patched.body).toMatchObject({ error: { code: 'invalid-request', message: expect.stringMatching(/^a value in the request cannot be stored: /) as unknown } });
  });
});

