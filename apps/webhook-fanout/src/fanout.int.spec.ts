import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queues } from '@herald/contracts';
import type { SubscriptionPage } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, HeraldHeaders, type Broker } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, createTestVhost, peekMessages, type TestDatabase, type TestVhost } from '@herald/testing';
import { createFanoutHandler } from './fanout.ts';
import { createFanoutMetrics } from './fanout-metrics.ts';

const logger = createLogger({ service: 'fanout-test', level: 'silent' });
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;

beforeAll(async () => {
  t = await createTestDatabase('fanout_chunks');
  vhost = await createTestVhost('fanoutchunks');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'fanout-test' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
});
afterAll(async () => {
  await broker?.close();
  await vhost?.delete();
  await t?.drop();
});

const change = (id: string, resourceId: string) => ({
  body: Buffer.from(JSON.stringify({ id, resource: { type: 'campaign', id: resourceId }, old: { n: 1 }, new: { n: 2 }, occurredAt: '2026-01-01T00:00:00Z' })),
  headers: {},
  routingKey: Queues.changes,
  redelivered: false,
  attempt: 1,
  queue: Queues.changes,
});

describe('webhook-fanout: matching subscriptions read in chunks', () => {
  it('notifies every match of a batch, reading the subscriptions a chunk at a time', async () => {
    const subs = t.db.subscriptions;
    const sub = (team: string, resourceId: string) => subs.create({ team, callbackUrl: 'https://hooks.example.com/h', resourceType: 'campaign', resourceId, secret: 'a-secret-of-16-chars-or-more' });
    const wildcards = await Promise.all(['t1', 't2', 't3', 't4'].map((team) => sub(team, '*')));
    const exact = await sub('t5', 'c1');
    await sub('t6', 'c2'); // another resource: not notified
    const pages: SubscriptionPage[] = [];
    const handle = createFanoutHandler({
      subscriptions: { findMatching: (resources, page) => (pages.push(page), subs.findMatching(resources, page)) },
      publisher: broker.publisher,
      resourceTypes: ['campaign'],
      maxChangeBytes: 65_536,
      metrics: createFanoutMetrics(new Registry()),
      logger,
      matchChunk: 2,
    });
    expect(await handle([change('e1', 'c1'), change('e2', 'c9')])).toEqual([{ kind: 'ack' }, { kind: 'ack' }]);
    // 5 matches (4 wildcards + c1's) read 2 at a time: 3 reads, each after the last one's id.
    expect(pages.map((p) => p.limit)).toEqual([2, 2, 2]);
    expect(pages[0]?.after).toBeUndefined();
    const queued = (await peekMessages(vhost.name, Queues.webhookSend, 100)).map((m) => JSON.parse(m.payload) as { eventId: string; subscriptionId: string });
    const of = (eventId: string) => queued.filter((d) => d.eventId === eventId).map((d) => d.subscriptionId).sort();
    expect(of('e1')).toEqual([...wildcards.map((w) => w.id), exact.id].sort());
    expect(of('e2')).toEqual(wildcards.map((w) => w.id).sort());
    expect(queued).toHaveLength(9);
  });

  it('publishes the deliveries of a batch a slice at a time, each confirmed before the next is made', async () => {
    const subs = t.db.subscriptions;
    // Of a type of its own: the other tests' wildcard subscriptions match every campaign.
    const many = await Promise.all(['s1', 's2', 's3', 's4', 's5'].map((team) => subs.create({ team, callbackUrl: 'https://hooks.example.com/s', resourceType: 'ad', resourceId: 'a-sliced', secret: 'a-secret-of-16-chars-or-more' })));
    const adChange = (id: string) => ({ ...change(id, 'a-sliced'), body: Buffer.from(JSON.stringify({ id, resource: { type: 'ad', id: 'a-sliced' }, old: { n: 1 }, new: { n: 2 }, occurredAt: '2026-01-01T00:00:00Z' })) });
    const published: number[] = [];
    const handle = createFanoutHandler({
      subscriptions: subs,
      publisher: { ...broker.publisher, publishMany: (messages) => (published.push(messages.length), broker.publisher.publishMany(messages)) },
      resourceTypes: ['campaign', 'ad'],
      maxChangeBytes: 65_536,
      metrics: createFanoutMetrics(new Registry()),
      logger,
      publishSlice: 3,
    });
    await handle([adChange('sliced-1'), adChange('sliced-2')]);
    // Ten deliveries (two events, five subscriptions) in slices of three (one publish of ten before).
    expect(published).toEqual([3, 3, 3, 1]);
    const queued = (await peekMessages(vhost.name, Queues.webhookSend, 200)).map((m) => ({ ...(JSON.parse(m.payload) as { subscriptionId: string }), headers: m.properties.headers }));
    const ours = queued.filter((d) => many.some((s) => s.id === d.subscriptionId));
    expect(ours).toHaveLength(10);
    // Each names its owner from the first copy: a park at the delivery limit (no outcome of the pusher's) can be replayed by --app or --subscription.
    for (const d of ours) expect(d.headers).toMatchObject({ [HeraldHeaders.team]: many.find((s) => s.id === d.subscriptionId)?.team, [HeraldHeaders.subscription]: d.subscriptionId });
  });

  it('parks a change event over WEBHOOK_MAX_CHANGE_BYTES published over AMQP (payload-too-large), and queues nothing for it', async () => {
    const subs = t.db.subscriptions;
    const big = await subs.create({ team: 't8', callbackUrl: 'https://hooks.example.com/big', resourceType: 'campaign', resourceId: 'c-big', secret: 'a-secret-of-16-chars-or-more' });
    const handle = createFanoutHandler({ subscriptions: subs, publisher: broker.publisher, resourceTypes: ['campaign'], maxChangeBytes: 1_024, metrics: createFanoutMetrics(new Registry()), logger });
    const event = { ...change('too-big', 'c-big'), body: Buffer.from(JSON.stringify({ id: 'too-big', resource: { type: 'campaign', id: 'c-big' }, old: { creative: 'a' }, new: { creative: 'b'.repeat(2_000) }, occurredAt: '2026-01-01T00:00:00Z' })) };
    const [outcome] = await handle([event]);
    expect(outcome).toMatchObject({ kind: 'park', code: 'payload-too-large', reason: expect.stringContaining('over the limit of 1024 (WEBHOOK_MAX_CHANGE_BYTES)') });
    const queued = (await peekMessages(vhost.name, Queues.webhookSend, 200)).map((m) => JSON.parse(m.payload) as { subscriptionId: string });
    expect(queued.filter((d) => d.subscriptionId === big.id)).toEqual([]);
  });

  it('tells receivers whether the resource was created, updated or deleted, and notifies a creation or deletion whose diff is empty', async () => {
    // Before, a deletion's diff read like fields set to null, and a resource created or deleted without fields notified nobody.
    const subs = t.db.subscriptions;
    const life = await subs.create({ team: 't7', callbackUrl: 'https://hooks.example.com/life', resourceType: 'campaign', resourceId: 'c-life', secret: 'a-secret-of-16-chars-or-more' });
    const handle = createFanoutHandler({ subscriptions: subs, publisher: broker.publisher, resourceTypes: ['campaign'], maxChangeBytes: 65_536, metrics: createFanoutMetrics(new Registry()), logger });
    const event = (id: string, old: object | null, now: object | null) => ({
      ...change(id, 'c-life'),
      body: Buffer.from(JSON.stringify({ id, resource: { type: 'campaign', id: 'c-life' }, old, new: now, occurredAt: '2026-01-01T00:00:00Z' })),
    });
    await handle([event('born', null, {}), event('edited', { n: 1 }, { n: 2 }), event('same', { n: 2 }, { n: 2 }), event('gone', { status: 'live' }, null)]);
    const queued = (await peekMessages(vhost.name, Queues.webhookSend, 100))
      .map((m) => JSON.parse(m.payload) as { eventId: string; subscriptionId: string; change: string; diff: object })
      .filter((d) => d.subscriptionId === life.id);
    expect(queued.map(({ eventId, change: kind, diff }) => ({ eventId, kind, diff }))).toEqual([
      { eventId: 'born', kind: 'created', diff: {} },
      { eventId: 'edited', kind: 'updated', diff: { n: { old: 1, new: 2 } } },
      { eventId: 'gone', kind: 'deleted', diff: { status: { old: 'live', new: null } } },
    ]);
  });
});
