import { createAudienceStore, type ApiKeyRow } from '@herald/db';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopic, deleteTopic, getTopic, type AudienceServiceDeps } from './audience-service.ts';

let t: TestDatabase;
let deps: AudienceServiceDeps;
const key: ApiKeyRow = { id: 'k1', team: 'team-demo', apps: ['demo'], createdAt: new Date(), revokedAt: null, kind: 'team' };

beforeAll(async () => {
  t = await createTestDatabase('api_topics');
  await t.db.apps.upsert({ id: 'demo' });
  deps = { apps: t.db.apps, audiences: createAudienceStore(t.db.kysely) };
});
afterAll(() => t?.drop());

describe('a topic named with dots only (created before such names were refused)', () => {
  // Fastify hands the handler the segment as sent: `curl -X DELETE .../v1/topics/%2E%2E` asks for "..".
  it('is shown and deleted when a client sends its name as it is; creating one stays refused, naming the field', async () => {
    await t.db.kysely.insertInto('topics').values({ app: 'demo', name: '..' }).execute();
    expect(await getTopic('..', {}, key, deps)).toMatchObject({ app: 'demo', name: '..', subscribers: 0 });
    await deleteTopic('..', {}, key, { ...deps, memberRemovals: { add: () => undefined } });
    await expect(getTopic('..', {}, key, deps)).rejects.toMatchObject({ status: 404 });
    await expect(createTopic({ name: '..' }, key, { ...deps, memberRemovals: { add: () => undefined } })).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/^name: must not be dots only/) });
  });
});
