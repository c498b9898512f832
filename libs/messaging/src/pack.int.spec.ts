import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@herald/testing';
import { HeraldHeaders } from './headers.ts';
import { PACK_IDS_HEADER, PACKED_CONTENT_TYPE } from './pack.ts';
import { recordingHandler, startTestBroker, takeMessage, waitForCounts, waitForMessage, type TestBroker } from './test-helpers.ts';
import { mergeTopologies, retryTopology, workQueueTopology } from './topology.ts';
import type { ConsumeOptions, InboundMessage, OutboundMessage, Outcome } from './types.ts';

describe('packed messages: several JSON bodies per AMQP message, each settled on its own', () => {
  let t: TestBroker;
  let n = 0;
  async function freshQueue(): Promise<string> {
    const queue = `p.work.${++n}`;
    await t.broker.applyTopology(mergeTopologies(workQueueTopology(queue, 'p.exchange'), retryTopology([200])));
    return queue;
  }
  const bodies = (queue: string, count: number, prefix = 'm'): OutboundMessage[] =>
    Array.from({ length: count }, (_, i) => ({ exchange: 'p.exchange', routingKey: queue, body: { id: `${prefix}${i}`, text: 'line\nbreak' }, messageId: `${prefix}${i}` }));
  const idOf = (m: InboundMessage): string => (JSON.parse(m.body.toString()) as { id: string }).id;
  const readyIn = async (queue: string): Promise<number> => (await t.broker.queueCounts([queue])).get(queue)?.ready ?? -1;
  /** Holds four packed messages, works on `maxInFlight` parts at once, in batches of five. */
  const windowed = (queue: string, maxInFlight: number, handle: ConsumeOptions['handle']) =>
    t.broker.consume({ queue, prefetch: 4, maxInFlight, batch: { maxSize: 5, maxWaitMs: 5 }, retryDelaysMs: [200], handle });

  beforeAll(async () => {
    t = await startTestBroker('msg-pack');
  });
  afterAll(() => t.teardown());

  it('travels packMax bodies to a message and reaches the handler one by one, in order, with their ids', async () => {
    const queue = await freshQueue();
    await t.broker.publisher.publishMany(bodies(queue, 25), { packMax: 10 });
    expect(await readyIn(queue)).toBe(3);
    const h = recordingHandler();
    const consumer = await t.broker.consume({ queue, prefetch: 3, batch: { maxSize: 3, maxWaitMs: 50 }, retryDelaysMs: [200], handle: h.handle });
    await waitFor('25 parts handled', () => h.seen.length === 25);
    await consumer.stop(1000);
    expect(h.seen.map(idOf)).toEqual(Array.from({ length: 25 }, (_, i) => `m${i}`));
    expect(h.seen.map((m) => m.messageId)).toEqual(Array.from({ length: 25 }, (_, i) => `m${i}`));
    expect(h.seen.every((m) => m.headers[PACK_IDS_HEADER] === undefined)).toBe(true);
    expect(await takeMessage(t.vhost.amqpUrl, queue)).toBe(false);
  });

  it('retries and parks a part as an ordinary message of its own, and acks the packed message once', async () => {
    const queue = await freshQueue();
    await t.broker.publisher.publishMany(bodies(queue, 4, 'x'), { packMax: 10 });
    expect(await readyIn(queue)).toBe(1);
    const decide = (m: InboundMessage): Outcome => {
      const id = idOf(m);
      if (id === 'x1' && m.attempt === 1) return { kind: 'retry', code: 'transient', reason: 'try again' };
      if (id === 'x2') return { kind: 'park', code: 'schema', reason: 'bad part' };
      return { kind: 'ack' };
    };
    const h = recordingHandler(decide);
    const consumer = await t.broker.consume({ queue, prefetch: 10, retryDelaysMs: [200], handle: h.handle });
    const parked = await waitForMessage(t.vhost.amqpUrl, `${queue}.parked`);
    await waitFor('the retried part back', () => h.seen.some((m) => idOf(m) === 'x1' && m.attempt === 2));
    await consumer.stop(1000);
    expect(parked.content.toString()).toBe(JSON.stringify({ id: 'x2', text: 'line\nbreak' }));
    expect(parked.properties.contentType).toBe('application/json');
    expect(parked.properties.messageId).toBe('x2');
    expect(parked.properties.headers?.[HeraldHeaders.parkedCode]).toBe('schema');
    expect(parked.properties.headers?.[PACK_IDS_HEADER]).toBeUndefined();
    expect(await takeMessage(t.vhost.amqpUrl, `${queue}.parked`)).toBe(false);
    // Each part handled once, the retried one twice; nothing came back unsettled.
    expect(h.seen.map((m) => `${idOf(m)}@${m.attempt}`).sort()).toEqual(['x0@1', 'x1@1', 'x1@2', 'x2@1', 'x3@1']);
    expect(h.seen.every((m) => !m.redelivered)).toBe(true);
    expect(await takeMessage(t.vhost.amqpUrl, queue)).toBe(false);
  });

  it('gives the whole packed message back when the handler fails: every part comes again', async () => {
    const queue = await freshQueue();
    await t.broker.publisher.publishMany(bodies(queue, 3, 'y'), { packMax: 10 });
    let calls = 0;
    const seen: string[] = [];
    const consumer = await t.broker.consume({
      queue,
      prefetch: 10,
      batch: { maxSize: 1, maxWaitMs: 0 },
      retryDelaysMs: [200],
      handle: async (ms) => {
        calls++;
        seen.push(...ms.map((m) => `${idOf(m)}${m.redelivered ? '@again' : ''}`));
        if (calls === 2) throw new Error('database is down');
        return ms.map(() => ({ kind: 'ack' }) as const);
      },
    });
    await waitFor('every part handled again', () => ['y0@again', 'y1@again', 'y2@again'].every((id) => seen.includes(id)), { timeoutMs: 10_000 });
    await consumer.stop(1000);
    expect(seen.slice(0, 2)).toEqual(['y0', 'y1']);
    expect(await takeMessage(t.vhost.amqpUrl, queue)).toBe(false);
  });

  it('a part settled after another part gave the packed message back publishes no copy of its own: it comes again with the rest', async () => {
    // Before, the late part's retry or park copy went out anyway, and the redelivered message gave it a second one.
    const queue = await freshQueue();
    await t.broker.publisher.publishMany(bodies(queue, 2, 'g'), { packMax: 10 });
    const seen: string[] = [];
    const consumer = await t.broker.consume({
      queue,
      prefetch: 10,
      batch: { maxSize: 1, maxWaitMs: 0, maxConcurrent: 2 },
      retryDelaysMs: [200],
      handle: async ([m]) => {
        if (m === undefined) return [];
        seen.push(`${idOf(m)}${m.redelivered ? '@again' : ''}`);
        if (m.redelivered) return [{ kind: 'ack' }];
        // g1 acks once an invalidation is confirmed, which fails: the whole message goes back (after the consumer's back-off).
        if (idOf(m) === 'g1') return [{ kind: 'ack', after: Promise.reject(new Error('not confirmed')) }];
        // g0's handler decides later, after that: a park, for a message that is already back in the queue.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        return [{ kind: 'park', code: 'schema', reason: 'decided late' }];
      },
    });
    await waitFor('both parts handled again', () => ['g0@again', 'g1@again'].every((id) => seen.includes(id)), { timeoutMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 2000)); // g0's first handler has decided by now
    await consumer.stop(1000);
    expect(await takeMessage(t.vhost.amqpUrl, `${queue}.parked`)).toBe(false);
    expect(await takeMessage(t.vhost.amqpUrl, queue)).toBe(false);
  });

  describe('at the delivery limit, a part that keeps failing', () => {
    type DoneCheck = NonNullable<ConsumeOptions['alreadyDone']>;
    /** Three parts in one message; d1 fails every time, d0 and d2 are done (in `done`) at their first delivery. */
    async function overTheLimit(check?: (done: ReadonlySet<string>) => DoneCheck): Promise<string[]> {
      const queue = await freshQueue();
      await t.broker.publisher.publishMany(bodies(queue, 3, 'd'), { packMax: 10 });
      const done = new Set<string>();
      const consumer = await t.broker.consume({
        queue,
        prefetch: 10,
        batch: { maxSize: 1, maxWaitMs: 0 },
        retryDelaysMs: [200],
        deliveryLimit: 2,
        handle: async (ms) => {
          if (ms.some((m) => idOf(m) === 'd1')) throw new Error('crashes on this part');
          for (const m of ms) done.add(idOf(m));
          return ms.map(() => ({ kind: 'ack' }) as const);
        },
        ...(check && { alreadyDone: check(done) }),
      });
      const parked: string[] = [];
      const take = async (): Promise<boolean> => {
        const m = await takeMessage(t.vhost.amqpUrl, `${queue}.parked`);
        if (m) parked.push(`${String(m.properties.messageId)}:${String(m.properties.headers?.[HeraldHeaders.parkedCode])}`);
        return m !== false;
      };
      await waitFor('d1 parked', async () => (await take()) && parked.some((p) => p.startsWith('d1:')), { timeoutMs: 15_000 });
      await consumer.stop(1000);
      while (await take());
      expect(await takeMessage(t.vhost.amqpUrl, queue)).toBe(false);
      return parked.sort();
    }

    it('is parked alone: the parts alreadyDone says are done are acked, not parked beside it', async () => {
      const asked: string[] = [];
      const parked = await overTheLimit((done) => async (ms) => {
        asked.push(...ms.map(idOf));
        return ms.map((m) => done.has(idOf(m)));
      });
      expect(parked).toEqual(['d1:delivery-limit']);
      // Asked once of each part, at the delivery that went over the limit (in batches as they come).
      expect(asked.sort()).toEqual(['d0', 'd1', 'd2']);
    });

    it('takes every part to the parked queue without alreadyDone, or when it fails', async () => {
      expect(await overTheLimit()).toEqual(['d0:delivery-limit', 'd1:delivery-limit', 'd2:delivery-limit']);
      expect(await overTheLimit(() => () => Promise.reject(new Error('database is down')))).toEqual(['d0:delivery-limit', 'd1:delivery-limit', 'd2:delivery-limit']);
    });

    it('parks every part when alreadyDone does not answer in time (a hung database), rather than holding the message', async () => {
      expect(await overTheLimit(() => () => new Promise<boolean[]>(() => undefined))).toEqual(['d0:delivery-limit', 'd1:delivery-limit', 'd2:delivery-limit']);
    });
  });

  it('works on at most maxInFlight parts at once, however many packed messages the prefetch holds', async () => {
    const queue = await freshQueue();
    await t.broker.publisher.publishMany(bodies(queue, 40, 'w'), { packMax: 10 });
    let inHandle = 0;
    let peak = 0;
    const seen: string[] = [];
    let readyWhileWorking = -1;
    const consumer = await windowed(queue, 10, async (ms) => {
      inHandle += ms.length;
      peak = Math.max(peak, inHandle);
      seen.push(...ms.map(idOf));
      if (seen.length === 20) readyWhileWorking = await readyIn(queue);
      await new Promise((resolve) => setTimeout(resolve, 30));
      inHandle -= ms.length;
      return ms.map(() => ({ kind: 'ack' }) as const);
    });
    await waitFor('40 parts handled', () => seen.length === 40);
    await consumer.stop(1000);
    // All four messages came at once (nothing left in the queue halfway), yet never more than ten parts were in hand.
    expect(readyWhileWorking).toBe(0);
    expect(peak).toBe(10);
    expect(seen).toEqual(Array.from({ length: 40 }, (_, i) => `w${i}`));
    expect(await takeMessage(t.vhost.amqpUrl, queue)).toBe(false);
  });

  it('gives back the messages of parts still waiting when it stops', async () => {
    const queue = await freshQueue();
    await t.broker.publisher.publishMany(bodies(queue, 40, 's'), { packMax: 10 });
    let started = 0;
    const consumer = await windowed(queue, 5, async (ms) => {
      started += ms.length;
      await new Promise((resolve) => setTimeout(resolve, 50));
      return ms.map(() => ({ kind: 'ack' }) as const);
    });
    await waitFor('the first parts in hand', () => started > 0);
    await consumer.stop(2000);
    // The first message's other five parts were waiting: it goes back whole, with the three behind it.
    expect(started).toBe(5);
    await waitForCounts(t.broker, queue, { ready: 4, consumers: 0 }, 'the four packed messages back in the queue, nobody consuming');
  });

  it('sends a message with headers, an expiry or a lone body as it is', async () => {
    const queue = await freshQueue();
    const plain = bodies(queue, 1, 'lone');
    const withHeader: OutboundMessage = { ...bodies(queue, 1, 'h')[0]!, headers: { 'x-keep': 'me' } };
    await t.broker.publisher.publishMany([...plain, withHeader], { packMax: 10 });
    const first = await waitForMessage(t.vhost.amqpUrl, queue);
    const second = await waitForMessage(t.vhost.amqpUrl, queue);
    expect([first.properties.contentType, second.properties.contentType]).toEqual(['application/json', 'application/json']);
    expect([first, second].some((m) => m.properties.contentType === PACKED_CONTENT_TYPE)).toBe(false);
  });
});
