import {
  createAudienceStore,
  createTopicWithin,
  removeDeletedMembers,
  sweepDeletedTopicMembers,
  type ApiKeyRow,
  type AudienceStore,
} from '@herald/db';
import { createLogger } from '@herald/logging';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from './api-error.ts';
import { registerAudienceRoutes } from './audience-routes.ts';

const BATCH = 1_000;
const MEMBERS = 2_500;
const key: ApiKeyRow = { id: 'k1', team: 'team-demo', apps: ['demo'], createdAt: new Date(), revokedAt: null, kind: 'team' };
const team: Parameters<typeof registerAudienceRoutes>[1] = (fn) => async (req, reply) => fn(req, key, reply);

let t: TestDatabase;
let api: FastifyInstance;
let store: AudienceStore;
let closed = false;
let firstBatchDone!: () => void;
const firstBatch = new Promise<void>((r) => {
  firstBatchDone = () => r();
});
/** Whether the removal started by the DELETE has ended. */
let removalEnded = false;

/** Resolves once `signal` aborts, or after `ms` (so a removal nobody stops cannot hang the spec). */
const abortedOr = (signal: AbortSignal | undefined, ms: number): Promise<void> =>
  new Promise((r) => {
    const timer = setTimeout(r, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      r();
    });
  });

beforeAll(async () => {
  t = await createTestDatabase('api_topic_delete');
  await t.db.apps.upsert({ id: 'demo' });
  store = createAudienceStore(t.db.kysely);
  // The store's removal in batches of BATCH, pausing after its first until it is stopped (10 s at most).
  let batches = 0;
  const audiences: AudienceStore = {
    ...store,
    removeDeletedMembers: (app, name, signal) =>
      removeDeletedMembers(t.db.kysely, app, name, {
        batchSize: BATCH,
        signal,
        skipLocked: true,
        onBatch: async () => {
          if (++batches > 1) return;
          firstBatchDone();
          await abortedOr(signal, 10_000);
        },
      }).finally(() => {
        removalEnded = true;
      }),
  };
  api = Fastify();
  registerAudienceRoutes(api, team, {
    apps: t.db.apps,
    audiences,
    logger: createLogger({ service: 'api-test', level: 'silent' }),
  });
  await api.ready();
});
afterAll(async () => {
  if (!closed) await api?.close();
  await t?.drop();
});

const memberRows = async (topic: string): Promise<number> =>
  Number(
    (
      await t.db.kysely
        .selectFrom('topic_members')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('app', '=', 'demo')
        .where('topic', '=', topic)
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('DELETE /v1/topics/:name of a topic with more members than a batch', () => {
  // Before, it answered once every member row was gone: minutes for millions, past the client's timeout.
  it("answers 204 before its members are removed; the API's close stops their removal after its statement, and the sweep removes the rest", async () => {
    await store.createTopic('demo', 'crowd');
    const eventAt = new Date(Date.now() - 60_000);
    await t.db.kysely
      .insertInto('topic_members')
      .values(
        Array.from({ length: MEMBERS }, (_, i) => ({
          app: 'demo',
          topic: 'crowd',
          member_kind: 'user',
          member_id: `u${i}`,
          subscribed: true,
          event_at: eventAt,
        })),
      )
      .execute();
    const answered = await Promise.race([
      api.inject({ method: 'DELETE', url: '/v1/topics/crowd?app=demo' }),
      firstBatch.then(() => new Promise<'no answer'>((r) => setTimeout(() => r('no answer'), 3_000))),
    ]);
    expect(answered === 'no answer' ? answered : answered.statusCode).toBe(204);
    expect(await store.findTopic('demo', 'crowd')).toBeUndefined();
    await firstBatch;
    expect(await memberRows('crowd')).toBe(MEMBERS - BATCH);
    // The close stops the removal (its signal resumes it here) and waits for it to end.
    closed = true;
    await api.close();
    expect(removalEnded).toBe(true);
    expect(await memberRows('crowd')).toBe(MEMBERS - BATCH);
    expect(await sweepDeletedTopicMembers(t.db.kysely, BATCH)).toBe(MEMBERS - BATCH);
    expect(await memberRows('crowd')).toBe(0);
  });
});

/** The audience routes over `audiences`, refusals answered as server.ts's error handler answers them. */
async function audienceApi(audiences: AudienceStore): Promise<FastifyInstance> {
  const server = Fastify();
  server.setErrorHandler((err, _req, reply) => {
    if (!(err instanceof ApiError)) throw err;
    void reply.status(err.status).send(err.body());
  });
  registerAudienceRoutes(server, team, { apps: t.db.apps, audiences, logger: createLogger({ service: 'api-test', level: 'silent' }) });
  await server.ready();
  return server;
}

/** `n` user members u1..un of the topic (not deleted yet), straight into the table, 5,000 a statement. */
async function fill(topic: string, n: number): Promise<void> {
  const eventAt = new Date(Date.now() - 86_400_000);
  for (let from = 1; from <= n; from += 5_000) {
    const ids = Array.from({ length: Math.min(5_000, n - from + 1) }, (_, i) => `u${from + i}`);
    await t.db.kysely
      .insertInto('topic_members')
      .values(ids.map((member_id) => ({ app: 'demo', topic, member_kind: 'user', member_id, subscribed: true, event_at: eventAt })))
      .execute();
  }
}

const create = (server: FastifyInstance, name: string) => server.inject({ method: 'POST', url: '/v1/topics', payload: { app: 'demo', name } });

describe('POST /v1/topics of a topic deleted moments ago whose memberships are still being removed', () => {
  // Before, the create removed every leftover row first, waiting for rows the background removal
  // held, with no bound: minutes for a topic of millions, past the client's timeout, and its retries piled up.
  it('answers 409 topic-being-deleted with Retry-After within a few seconds while a leftover row is held; once it is free, 201 without it', async () => {
    const server = await audienceApi(store);
    try {
      await store.createTopic('demo', 'again');
      await fill('again', 3_000);
      let release!: () => void;
      const released = new Promise<void>((r) => {
        release = r;
      });
      let held!: () => void;
      const holding = new Promise<void>((r) => {
        held = r;
      });
      // Another transaction holds one leftover row (a removal's statement under way) until released.
      const holder = t.db.kysely.transaction().execute(async (tx) => {
        await tx.selectFrom('topic_members').select('member_id').where('app', '=', 'demo').where('topic', '=', 'again').where('member_id', '=', 'u1').forUpdate().execute();
        held();
        await released;
      });
      await holding;
      try {
        expect((await server.inject({ method: 'DELETE', url: '/v1/topics/again?app=demo' })).statusCode).toBe(204);
        const started = performance.now();
        const refused = await Promise.race([create(server, 'again'), new Promise<'no answer'>((r) => setTimeout(() => r('no answer'), 10_000).unref())]);
        expect(refused === 'no answer' ? refused : [refused.statusCode, refused.headers['retry-after'], refused.json()]).toEqual([
          409,
          '5',
          {
            error: {
              code: 'topic-being-deleted',
              message: 'topic "again" of app "demo" was deleted and its earlier memberships are still being removed; try again in 5 s',
              issues: [{ path: 'name', message: 'a topic of this name was deleted; its memberships are still being removed' }],
            },
          },
        ]);
        expect(performance.now() - started).toBeLessThan(4_000);
        expect(await store.findTopic('demo', 'again')).toBeUndefined();
      } finally {
        release();
        await holder;
      }
      const created = await create(server, 'again');
      expect([created.statusCode, created.json()]).toEqual([201, expect.objectContaining({ name: 'again', subscribers: 0 })]);
      expect(await memberRows('again')).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('queues the removal of what the create left: it goes on after the 409 until none is left, and the topic is then created without them', async () => {
    // The create's removal bounded to a few statements: the leftovers outlast it as a topic of millions outlasts 2 s.
    const server = await audienceApi({ ...store, createTopic: (app, name) => createTopicWithin(t.db.kysely, app, name, { withinMs: 30, batchSize: 100 }) });
    try {
      await store.createTopic('demo', 'queued');
      await fill('queued', 20_000);
      // Deleted without the API (a deletion whose removal the API's stop cut short): nothing else removes its rows here.
      expect(await store.deleteTopic('demo', 'queued')).toBe(true);
      const refused = await create(server, 'queued');
      expect([refused.statusCode, refused.headers['retry-after'], (refused.json() as { error: { code: string } }).error.code]).toEqual([409, '5', 'topic-being-deleted']);
      const deadline = Date.now() + 15_000;
      while ((await memberRows('queued')) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await memberRows('queued')).toBe(0);
      const created = await create(server, 'queued');
      expect([created.statusCode, created.json()]).toEqual([201, expect.objectContaining({ name: 'queued', subscribers: 0 })]);
    } finally {
      await server.close();
    }
  });
});
