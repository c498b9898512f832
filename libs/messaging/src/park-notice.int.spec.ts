import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@herald/testing';
import { HeraldHeaders } from './headers.ts';
import { recordingHandler, startTestBroker, takeMessage, waitForMessage, type TestBroker } from './test-helpers.ts';
import { mergeTopologies, retryTopology, workQueueTopology } from './topology.ts';
import type { InboundMessage, Outcome, ParkedNotice } from './types.ts';

const DELAYS = [200];

/** onParked hears of every park, whoever decided it; the delivery limit is enforced where it can be heard. */
describe('parks reported to onParked', () => {
  let t: TestBroker;
  let n = 0;
  async function freshQueue(deliveryLimit?: number): Promise<string> {
    const queue = `pn.work.${++n}`;
    await t.broker.applyTopology(
      mergeTopologies(
        workQueueTopology(queue, 'pn.exchange', deliveryLimit === undefined ? {} : { deliveryLimit }),
        retryTopology(DELAYS),
      ),
    );
    return queue;
  }
  const send = (queue: string, body: string) =>
    t.broker.publisher.publish({ exchange: 'pn.exchange', routingKey: queue, body: Buffer.from(body), messageId: body });
  const noticesOf = () => {
    const notices: Array<Omit<ParkedNotice, 'message'> & { body: string }> = [];
    return {
      notices,
      onParked: async (p: ParkedNotice) => void notices.push({ code: p.code, reason: p.reason, body: p.message.body.toString() }),
    };
  };

  beforeAll(async () => {
    t = await startTestBroker('msg-park-notice');
  });
  afterAll(() => t.teardown());

  it("tells of the handler's park and of a retry that ran out, with code and reason, and acks both", async () => {
    const queue = await freshQueue();
    const { notices, onParked } = noticesOf();
    const h = recordingHandler((m: InboundMessage): Outcome =>
      m.body.toString() === 'bad'
        ? { kind: 'park', code: 'schema', reason: 'no app' }
        : { kind: 'retry', code: 'transient', reason: `503 on try ${m.attempt}` },
    );
    const consumer = await t.broker.consume({ queue, prefetch: 2, retryDelaysMs: DELAYS, handle: h.handle, onParked });
    await send(queue, 'bad');
    await send(queue, 'flaky');
    await waitFor('two parks told', () => notices.length === 2);
    await consumer.stop(1000);
    expect(notices.sort((a, b) => a.body.localeCompare(b.body))).toEqual([
      { body: 'bad', code: 'schema', reason: 'no app' },
      { body: 'flaky', code: 'retries-exhausted', reason: '503 on try 2' },
    ]);
    expect(
      (await waitForMessage(t.vhost.amqpUrl, `${queue}.parked`)).properties.headers?.[HeraldHeaders.parkedCode],
    ).toBeDefined();
    expect(await takeMessage(t.vhost.amqpUrl, queue)).toBe(false);
  });

  it('parks a message that keeps failing on its last delivery itself, with a reason, without handing it over again', async () => {
    const queue = await freshQueue(2);
    const { notices, onParked } = noticesOf();
    let handled = 0;
    const handle = (): Promise<Outcome[]> => {
      handled++;
      return Promise.reject(new Error('database is down'));
    };
    const consumer = await t.broker.consume({ queue, prefetch: 1, retryDelaysMs: DELAYS, deliveryLimit: 2, handle, onParked });
    await send(queue, 'poison');
    const parked = await waitForMessage(t.vhost.amqpUrl, `${queue}.parked`, 20_000);
    await consumer.stop(1000);
    expect(handled).toBe(2);
    expect(parked.properties.headers).toMatchObject({
      [HeraldHeaders.parkedCode]: 'delivery-limit',
      [HeraldHeaders.originalQueue]: queue,
    });
    expect(parked.properties.headers?.['x-first-death-reason']).toBeUndefined(); // not left to the broker
    expect(notices).toEqual([
      { body: 'poison', code: 'delivery-limit', reason: expect.stringContaining('delivered 3 times without being settled') },
    ]);
  });

  it('parks and acks all the same when onParked fails', async () => {
    const queue = await freshQueue();
    const h = recordingHandler(() => ({ kind: 'park', code: 'schema', reason: 'no app' }));
    const consumer = await t.broker.consume({
      queue,
      prefetch: 1,
      retryDelaysMs: DELAYS,
      handle: h.handle,
      onParked: () => Promise.reject(new Error('status store down')),
    });
    await send(queue, 'bad');
    const parked = await waitForMessage(t.vhost.amqpUrl, `${queue}.parked`);
    await consumer.stop(1000);
    expect(parked.content.toString()).toBe('bad');
    expect(h.seen).toHaveLength(1);
    expect(await takeMessage(t.vhost.amqpUrl, queue)).toBe(false);
  });

  it("does not pass the broker's redelivery count on to a retry copy, which would count against the copy's limit", async () => {
    const queue = await freshQueue(2);
    const seen: InboundMessage[] = [];
    const handle = (ms: readonly InboundMessage[]): Promise<Outcome[]> => {
      seen.push(...ms);
      // First delivery fails (redelivered with x-delivery-count 1), then retry, then ack the copy.
      if (seen.length === 1) return Promise.reject(new Error('blip'));
      return Promise.resolve(
        ms.map((m) => (m.attempt === 1 ? { kind: 'retry', code: 'transient', reason: 'again' } : { kind: 'ack' })),
      );
    };
    const consumer = await t.broker.consume({ queue, prefetch: 1, retryDelaysMs: DELAYS, deliveryLimit: 2, handle });
    await send(queue, 'm');
    await waitFor('the retry copy handled', () => seen.some((m) => m.attempt === 2), { timeoutMs: 15_000 });
    await consumer.stop(1000);
    expect(seen[1]?.headers['x-delivery-count']).toBe(1);
    expect(seen.find((m) => m.attempt === 2)?.headers['x-delivery-count']).toBeUndefined();
  });
});
