import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordingHandler, startTestBroker, type TestBroker } from './test-helpers.ts';
import { workQueueTopology } from './topology.ts';

describe('live queue counts', () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startTestBroker('msg-counts');
    await t.broker.applyTopology(workQueueTopology('q.work', 'q.exchange'));
  });
  afterAll(() => t.teardown());

  it('reports ready messages and consumers at once, and leaves out queues that do not exist', async () => {
    await t.broker.publisher.publishMany(Array.from({ length: 7 }, (_, i) => ({ exchange: 'q.exchange', routingKey: 'q.work', body: { i } })));
    const before = await t.broker.queueCounts(['q.work', 'no.such.queue', 'q.work.parked']);
    expect(before.get('q.work')).toEqual({ ready: 7, consumers: 0 });
    expect(before.has('no.such.queue')).toBe(false);
    expect(before.get('q.work.parked')).toEqual({ ready: 0, consumers: 0 });

    const h = recordingHandler();
    const consumer = await t.broker.consume({ queue: 'q.work', prefetch: 10, retryDelaysMs: [200], handle: h.handle });
    try {
      const during = await t.broker.queueCounts(['q.work']);
      expect(during.get('q.work')?.consumers).toBe(1);
    } finally {
      await consumer.stop(1_000);
    }
  });
});
