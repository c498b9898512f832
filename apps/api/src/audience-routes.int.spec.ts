import {
  createAudienceStore,
  removeDeletedMembers,
  sweepDeletedTopicMembers,
  type ApiKeyRow,
  type AudienceStore,
} from '@herald/db';
import { createLogger } from '@herald/logging';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
