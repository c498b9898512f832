import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@herald/testing';
import { coalescedPublish } from './coalesced-publish.ts';
import { UnroutableError } from './errors.ts';
import { PACKED_CONTENT_TYPE } from './pack.ts';
import { recordingHandler, startTestBroker, takeMessage, waitForMessage, type TestBroker } from './test-helpers.ts';
import { workQueueTopology } from './topology.ts';
import type { InboundMessage, OutboundMessage } from './types.ts';

describe('coalescedPublish: concurrent calls share AMQP messages, each settled by its own', () => {
  let t: TestBroker;
  let n = 0;
  async function freshQueue(): Promise<string> {
    const queue = `cp.work.${++n}`;
    await t.broker.applyTopology(workQueueTopology(queue, 'cp.exchange'));
    return queue;
  }
  const job = (queue: string, id: string): OutboundMessage => ({ exchange: 'cp.exchange', routingKey: queue, body: { id }, messageId: id });
  const idOf = (m: InboundMessage): string => (JSON.parse(m.body.toString()) as { id: string }).id;
  const readyIn = async (queue: string): Promise<number> => (await t.broker.queueCounts([queue])).get(queue)?.ready ?? -1;

  beforeAll(async () => {
    t = await startTestBroker('msg-coalesced');
  });
  afterAll(() => t.teardown());

  it('sends calls made together as packed messages of at most packMax, and the consumer sees every one with its id', async () => {
    const queue = await freshQueue();
    const publish = coalescedPublish(t.broker.publisher, { packMax: 10 });
    const ids = Array.from({ length: 25 }, (_, i) => `j${i}`);
    await Promise.all(ids.map((id) => publish(job(queue, id))));
    expect(await readyIn(queue)).toBe(3);
    const h = recordingHandler();
    const consumer = await t.broker.consume({ queue, prefetch: 10, retryDelaysMs: [200], handle: h.handle });
    await waitFor('25 jobs handled', () => h.seen.length === 25);
    await consumer.stop(1000);
    expect(h.seen.map(idOf)).toEqual(ids);
    expect(h.seen.map((m) => m.messageId)).toEqual(ids);
  });

  it('sends a lone call as a plain message, as publish would', async () => {
    const queue = await freshQueue();
    const publish = coalescedPublish(t.broker.publisher);
    await publish(job(queue, 'alone'));
    const msg = await waitForMessage(t.vhost.amqpUrl, queue);
    expect(msg.properties.contentType).toBe('application/json');
    expect(msg.properties.messageId).toBe('alone');
    expect(JSON.parse(msg.content.toString())).toEqual({ id: 'alone' });
  });

  it('packs calls made while a round awaits its confirms into the next round', async () => {
    const queue = await freshQueue();
    const publish = coalescedPublish(t.broker.publisher, { packMax: 10 });
    const first = publish(job(queue, 'first'));
    // Made in later turns, while the first awaits its confirm: they wait for it, then go together.
    await new Promise((resolve) => setImmediate(resolve));
    const later = Array.from({ length: 5 }, (_, i) => publish(job(queue, `later${i}`)));
    await Promise.all([first, ...later]);
    expect(await readyIn(queue)).toBe(2);
    const lone = await waitForMessage(t.vhost.amqpUrl, queue);
    expect(lone.properties.messageId).toBe('first');
    const packed = await waitForMessage(t.vhost.amqpUrl, queue);
    expect(packed.properties.contentType).toBe(PACKED_CONTENT_TYPE);
    expect(packed.content.toString().split('\n').map((line) => (JSON.parse(line) as { id: string }).id)).toEqual(['later0', 'later1', 'later2', 'later3', 'later4']);
  });

  it('fails only the calls whose message was refused: an unroutable routing key beside a routable one in the same round', async () => {
    const queue = await freshQueue();
    const publish = coalescedPublish(t.broker.publisher, { packMax: 10 });
    const results = await Promise.allSettled([
      publish(job(queue, 'ok0')),
      publish({ ...job(queue, 'lost0'), routingKey: `${queue}.nowhere` }),
      publish(job(queue, 'ok1')),
      publish({ ...job(queue, 'lost1'), routingKey: `${queue}.nowhere` }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(UnroutableError);
    const h = recordingHandler();
    const consumer = await t.broker.consume({ queue, prefetch: 10, retryDelaysMs: [200], handle: h.handle });
    await waitFor('the two routable jobs handled', () => h.seen.length === 2);
    await consumer.stop(1000);
    expect(h.seen.map(idOf)).toEqual(['ok0', 'ok1']);
    expect(await takeMessage(t.vhost.amqpUrl, queue)).toBe(false);
  });
});
