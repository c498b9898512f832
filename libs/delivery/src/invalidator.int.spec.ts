import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '@herald/db';
import { createLogger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { createInvalidatorHandler } from './invalidator.ts';
import { createInvalidatorMetrics } from './invalidator-metrics.ts';

const logger = createLogger({ service: 'invalidator-test', level: 'silent' });
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('invalidator');
  await t.db.apps.upsert({ id: 'chat' });
});
afterAll(() => t.drop());

const message = (body: unknown) => ({
  body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
  headers: {},
  routingKey: 'push.apns.invalidations',
  redelivered: false,
  attempt: 1,
  queue: 'push.apns.invalidations',
});
const register = (token: string, eventAt: string) =>
  t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'chat', platform: 'apns', token, userId: 'u1', eventAt });
const invalidation = (token: string, extra: Record<string, unknown> = {}) => ({
  platform: 'apns',
  app: 'chat',
  token,
  reason: 'Unregistered',
  observedAt: '2025-03-02T00:00:00Z',
  ...extra,
});
const device = (token: string) => t.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirstOrThrow();

describe('invalidator handler', () => {
  it('applies a batch: invalidates, keeps a token registered after invalidSince, ignores unknown ones, parks bad input', async () => {
    await register('t-old', '2025-03-01T00:00:00Z');
    await register('t-new', '2025-03-05T00:00:00Z');
    const metrics = createInvalidatorMetrics(new Registry());
    const handle = createInvalidatorHandler({ platform: 'apns', devices: t.db.devices, metrics, logger });
    const outcomes = await handle([
      message(invalidation('t-old', { invalidSince: '2025-03-01T12:00:00Z' })),
      message(invalidation('t-new', { invalidSince: '2025-03-01T12:00:00Z' })),
      message(invalidation('t-never')),
      message('{"platform": '),
      message(invalidation('t-x', { platform: 'fcm' })),
      message(invalidation('t-y', { token: '' })),
    ]);
    expect(outcomes.slice(0, 3)).toEqual([{ kind: 'ack' }, { kind: 'ack' }, { kind: 'ack' }]);
    expect(outcomes[3]).toMatchObject({ kind: 'park', code: 'malformed-json' });
    expect(outcomes[4]).toMatchObject({ kind: 'park', code: 'wrong-platform' });
    expect(outcomes[5]).toMatchObject({ kind: 'park', code: 'schema', reason: expect.stringContaining('token') });
    expect(await device('t-old')).toMatchObject({ invalidation_reason: 'Unregistered', invalidated_at: new Date('2025-03-01T12:00:00Z') });
    expect(await device('t-new')).toMatchObject({ invalidated_at: null });
    const counts = Object.fromEntries((await metrics.invalidations.get()).values.map((v) => [v.labels['result'], v.value]));
    expect(counts).toEqual({ invalidated: 1, stale: 1, unknown: 1, parked: 3 });
    expect(await t.db.devices.invalidTokens([{ app: 'chat', platform: 'apns', token: 't-old' }, { app: 'chat', platform: 'apns', token: 't-new' }])).toEqual(
      new Set(['chat\u0000apns\u0000t-old']),
    );
  });

  it('defers the valid messages while the database is down (no attempt spent)', async () => {
    const broken = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/test', schema: t.schema });
    const handle = createInvalidatorHandler({ platform: 'apns', devices: broken.devices, metrics: createInvalidatorMetrics(new Registry()), logger });
    const outcomes = await handle([message('nope'), message(invalidation('t-retry'))]).finally(() => broken.close());
    expect(outcomes[0]).toMatchObject({ kind: 'park' });
    expect(outcomes[1]).toMatchObject({ kind: 'defer', code: 'database-unavailable' });
  });
});
