import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Exchanges, invalidationQueueFor, parkedQueueFor, type DevicePush } from '@herald/contracts';
import { createDatabase } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, type InboundMessage } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, createTestVhost, downThenUp, errorRecordingLogger, expectDeferredWithBackoff, queueInfo, waitFor, type TestDatabase } from '@herald/testing';
import { createInvalidatorHandler, invalidatorErrors } from './invalidator.ts';
import { createInvalidatorMetrics } from './invalidator-metrics.ts';
import { createPusherHandler } from './pusher.ts';
import { createPusherMetrics } from './pusher-metrics.ts';
import { singleProvider } from './provider-pool.ts';

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
/** As the demuxer emits it: deviceId is the id of the token's devices row. */
const devicePush = (token: string, deviceId: string): DevicePush => ({ version: 1, pushId: randomUUID(), jobId: 'j', deviceId, app: 'chat', platform: 'apns', token,
  userId: 'u1', content: { title: 'Hi' }, priority: 'high', acceptedAt: new Date().toISOString() });
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
  });

  it('a push queued before its token was invalidated, or whose device row is gone, is acked unsent by the pusher, counted invalid, and kept out of the ledger; the other is delivered and recorded', async () => {
    const [deadToken, liveToken, unknownToken] = ['d', 'e', 'f'].map((hex) => hex.repeat(64)) as [string, string, string];
    await register(deadToken, '2025-03-01T00:00:00Z');
    await register(liveToken, '2025-03-01T00:00:00Z');
    const dead = devicePush(deadToken, String((await device(deadToken)).id));
    const live = devicePush(liveToken, String((await device(liveToken)).id));
    // Its row gone (pruned once dead): sent, it would reach whoever holds the token now.
    const unknown = devicePush(unknownToken, '999999999');
    await createInvalidatorHandler({ platform: 'apns', devices: t.db.devices, metrics: createInvalidatorMetrics(new Registry()), logger })([message(invalidation(deadToken))]);
    const sent: string[] = [];
    const noted: Array<[string, string]> = [];
    const metrics = createPusherMetrics(new Registry());
    const handle = createPusherHandler({
      platform: 'apns',
      providers: singleProvider({ platform: 'apns', send: async (push) => (sent.push(push.token), { kind: 'delivered' }), close: async () => undefined }),
      outcomes: { note: (push, outcome) => void noted.push([push.token, outcome]), noteEntry: () => undefined, flush: async () => undefined },
      ledger: t.db.ledger,
      apps: { get: async (id) => ({ id, apnsTopic: 'com.herald.chat', fcmProjectId: null, enabled: true, createdAt: new Date(), updatedAt: new Date() }) },
      publisher: { publish: async () => undefined, publishMany: async () => undefined },
      metrics,
      logger,
      owner: 'invalidator-spec',
      leaseMs: 30_000,
    });
    const body = (push: DevicePush) => ({ ...message(push), routingKey: 'push.apns.send', queue: 'push.apns.send' });
    expect(await handle([body(dead), body(live), body(unknown), body(dead)])).toEqual(Array(4).fill({ kind: 'ack' }));
    expect(sent).toEqual([liveToken]);
    // The batch's second copy of the dead push is a duplicate of the first.
    expect(noted).toEqual([[deadToken, 'invalid'], [unknownToken, 'invalid']]);
    const invalid = (await metrics.pushes.get()).values.find((v) => v.labels['outcome'] === 'invalid');
    expect(invalid?.value).toBe(2);
    const ledger = await t.db.kysely.selectFrom('delivery_ledger').select(['push_id', 'state']).where('push_id', 'in', [dead.pushId, live.pushId]).execute();
    expect(ledger).toEqual([{ push_id: live.pushId, state: 'done' }]);
    // The delivered pushes' job status was written with their ledger record, not through the recorder.
    const status = await t.db.kysely.selectFrom('push_outcomes').select(['push_id', 'outcome', 'device_id']).where('push_id', 'in', [dead.pushId, live.pushId, unknown.pushId]).execute();
    expect(status).toEqual([{ push_id: live.pushId, outcome: 'delivered', device_id: live.deviceId }]);
  });

  it("a dead token's push waits for its invalidation's confirm alone: the batch is answered first, the push recorded once it is confirmed, and not recorded if it is lost", async () => {
    const [deadToken, liveToken] = ['a', 'b'].map((hex) => hex.repeat(64)) as [string, string];
    const gates: Array<{ open: () => void; fail: (err: Error) => void }> = [];
    const published: unknown[] = [];
    const handle = createPusherHandler({
      platform: 'apns',
      providers: singleProvider({ platform: 'apns', send: async (push) => (push.token === deadToken ? { kind: 'dead-token', reason: 'Unregistered' } : { kind: 'delivered' }), close: async () => undefined }),
      ledger: t.db.ledger,
      apps: { get: async (id) => ({ id, apnsTopic: 'com.herald.chat', fcmProjectId: null, enabled: true, createdAt: new Date(), updatedAt: new Date() }) },
      // The invalidation's publish is held, as RabbitMQ holds a publish in a memory alarm.
      publisher: {
        publish: async () => undefined,
        publishMany: (msgs) => new Promise<void>((open, fail) => gates.push({ open: () => (published.push(...msgs), open()), fail })),
      },
      metrics: createPusherMetrics(new Registry()),
      logger,
      owner: 'invalidator-spec',
      leaseMs: 600,
    });
    const body = (push: DevicePush) => ({ ...message(push), routingKey: 'push.apns.send', queue: 'push.apns.send' });
    const claimedAt = async (pushId: string) => (await t.db.kysely.selectFrom('delivery_ledger').select('claimed_at').where('push_id', '=', pushId).executeTakeFirst())?.claimed_at;
    const stateOf = async (pushId: string) => (await t.db.kysely.selectFrom('delivery_ledger').select('state').where('push_id', '=', pushId).executeTakeFirst())?.state;

    // Devices the claim does not look up (no devices ids): only the provider's answer tells them apart.
    const [dead, live] = [devicePush(deadToken, 'spec-a'), devicePush(liveToken, 'spec-b')];
    const outcomes = await handle([body(dead), body(live)]);
    expect(outcomes[1]).toEqual({ kind: 'ack' });
    const waiting = outcomes[0];
    expect(waiting?.kind === 'ack' && waiting.after instanceof Promise).toBe(true);
    expect(await stateOf(live.pushId)).toBe('done');
    expect(await stateOf(dead.pushId)).not.toBe('done'); // claimed: not recorded before its invalidation is confirmed
    // Its claim is kept while it waits (renewed every third of the 600 ms lease), so no other copy takes it over.
    const first = await claimedAt(dead.pushId);
    await new Promise((r) => setTimeout(r, 700));
    expect((await claimedAt(dead.pushId))?.getTime()).toBeGreaterThan(first?.getTime() ?? Infinity);
    gates[0]?.open();
    await (waiting as { after: Promise<unknown> }).after;
    expect(await stateOf(dead.pushId)).toBe('done');
    expect(published).toEqual([expect.objectContaining({ routingKey: 'push.apns.invalidations', body: expect.objectContaining({ token: deadToken, reason: 'Unregistered' }) })]);

    // A lost invalidation: the claim is given up, so the push's redelivery sends it (and invalidates) again at once.
    const again = devicePush(deadToken, 'spec-a');
    const [lost] = await handle([body(again)]);
    expect(await stateOf(again.pushId)).toBe('sending');
    gates[1]?.fail(new Error('channel closed'));
    await expect((lost as { after: Promise<unknown> }).after).rejects.toThrow('channel closed');
    expect(await stateOf(again.pushId)).toBeUndefined();
  });

  it('throws while the database is down, an error the consumer defers the batch for (invalidatorErrors.deferOn); counts and tells nothing of a batch it throws', async () => {
    const broken = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/test', schema: t.schema });
    const quiet = createLogger({ service: 'invalidator-test', level: 'silent' });
    const said = [vi.spyOn(quiet, 'error'), vi.spyOn(quiet, 'warn')];
    const metrics = createInvalidatorMetrics(new Registry());
    const handle = createInvalidatorHandler({ platform: 'apns', devices: broken.devices, metrics, logger: quiet });
    const err = await handle([message('nope'), message(invalidation('t-retry'))])
      .finally(() => broken.close())
      .then((o) => o, (e: unknown) => e);
    expect(invalidatorErrors.deferOn(err)).toMatchObject({ code: 'database-unavailable' });
    expect(invalidatorErrors.messageError(err)).toBeUndefined();
    // The bad one is parked, counted and told when the batch comes back: once, however long the outage.
    expect(said.map((s) => s.mock.calls.length)).toEqual([0, 0]);
    expect((await metrics.invalidations.get()).values.filter((v) => v.value > 0)).toEqual([]);
  });

  it('rides out a database outage on the consumer: the batch is deferred after a back-off that grows (0.5 s, 1 s, 2 s), no attempt or delivery count spent, one log line a batch (the consumer\'s), then applied', async () => {
    const queue = invalidationQueueFor('apns');
    const vhost = await createTestVhost('invalidator-outage');
    const retryDelaysMs = [1_000];
    const { logger: brokerLogger, errors: consumerErrors } = errorRecordingLogger('invalidator-test');
    const handlerLogger = createLogger({ service: 'invalidator-test', level: 'silent' });
    const handlerErrors = vi.spyOn(handlerLogger, 'error');
    const broker = await connectBroker({ url: vhost.amqpUrl, logger: brokerLogger, connectionName: 'invalidator-outage-test' });
    const broken = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/test', schema: t.schema });
    try {
      await register('t-outage', '2025-03-01T00:00:00Z');
      // A delivery limit of 2: a batch requeued instead of deferred would be parked at its third delivery.
      await broker.applyTopology(heraldTopology({ retryDelaysMs, deliveryLimit: 2 }));
      const metrics = createInvalidatorMetrics(new Registry());
      const down = createInvalidatorHandler({ platform: 'apns', devices: broken.devices, metrics, logger: handlerLogger });
      const up = createInvalidatorHandler({ platform: 'apns', devices: t.db.devices, metrics, logger: handlerLogger });
      // The database is away for the first three deliveries, back for the fourth.
      const { handle, seen } = downThenUp<InboundMessage, ReturnType<typeof up>>(down, up, 3);
      const consumer = await broker.consume({ queue, prefetch: 10, retryDelaysMs, handle, ...invalidatorErrors });
      await broker.publisher.publish({ exchange: Exchanges.invalidations, routingKey: queue, body: invalidation('t-outage'), messageId: 'outage' });
      await waitFor('applied once the database is back', async () => (await device('t-outage')).invalidated_at !== null, { timeoutMs: 30_000 });
      await waitFor('acked', async () => (await queueInfo(vhost.name, queue))?.messages === 0);
      await consumer.stop(1_000);
      expectDeferredWithBackoff(seen, consumerErrors());
      expect(handlerErrors.mock.calls).toHaveLength(0);
      expect((await metrics.invalidations.get()).values.map((v) => [v.labels['result'], v.value])).toEqual([['invalidated', 1]]);
      expect((await queueInfo(vhost.name, parkedQueueFor(queue)))?.messages).toBe(0);
    } finally {
      await broker.close();
      await broken.close();
      await vhost.delete();
    }
  });
});
