import { createAudienceStore } from '@herald/db';
import { createLogger } from '@herald/logging';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApiServer } from './server.ts';
import { specServerDeps } from './spec-server-deps.ts';

// What PostgreSQL refuses as data, when no check before it caught the value, is the caller's to
// fix: a 400 naming it, not a 500. The store below hands PostgreSQL a time in the year 0000, as the
// API did for any `eventAt` of that year until the contracts refused it (Instant): it stands for
// such a value a check misses.
let t: TestDatabase;
let api: FastifyInstance;
let key: string;

beforeAll(async () => {
  t = await createTestDatabase('api_server');
  await t.db.apps.upsert({ id: 'demo' });
  key = (await t.db.apiKeys.create('team-demo', ['demo'])).key;
  const logger = createLogger({ service: 'api-test', level: 'silent' });
  const audiences = createAudienceStore(t.db.kysely);
  const deps = specServerDeps(t, logger, {
    audiences: {
      ...audiences,
      applyFollowEvents: (events) => audiences.applyFollowEvents(events.map((e) => ({ ...e, eventAt: '0000-01-01T00:00:00Z' }))),
    },
  });
  api = buildApiServer(deps);
  await api.ready();
});
afterAll(async () => {
  await api?.close();
  await t?.drop();
});

describe('database refusals the API answers 4xx', () => {
  it('a date or time PostgreSQL cannot hold (22008) is a 400 naming the value, not a 500', async () => {
    const answer = await api.inject({
      method: 'POST',
      url: '/v1/follows',
      headers: { authorization: `Bearer ${key}` },
      payload: { events: [{ follower: 'u1', followee: 'u2', following: true, eventAt: '2026-01-01T00:00:00Z' }] },
    });
    expect(answer.statusCode, answer.body).toBe(400);
    expect(answer.json()).toEqual({
      error: {
        code: 'invalid-request',
        message: 'a value in the request cannot be stored: date/time field value out of range: "0000-01-01T00:00:00Z"',
      },
    });
  });
});
