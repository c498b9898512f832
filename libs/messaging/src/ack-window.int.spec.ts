import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@herald/testing';
import { RETURN_WAIT_MS, startTestBroker, takeAllWithin, takeMessage, waitForMessage, type TestBroker } from './test-helpers.ts';
import { workQueueTopology } from './topology.ts';
import type { InboundMessage, Outcome } from './types.ts';

/** Acks go out per tick, several as one multiple-ack (ack-window.ts); none may cover a message still being worked on. */
describe('consumer acks', () => {
  let t: TestBroker;
  let n = 0;
  async function queueWith(bodies: string[]): Promise<string> {
    const queue = `aw.work.${++n}`;
    await t.broker.applyTopology(workQueueTopology(queue, 'aw.exchange'));
    await t.broker.publisher.publishMany(bodies.map((b) => ({ exchange: 'aw.exchange', routingKey: queue, body: Buffer.from(b), messageId: b })));
    return queue;
  }

  beforeAll(async () => {
    t = await startTestBroker('msg-ack-window');
  });
  afterAll(() => t.teardown());

  it('does not ack the oldest message with the later ones while it is still being handled', async () => {
    const queue = await queueWith(['m0', 'm1', 'm2', 'm3', 'm4']);
    const handled: string[] = [];
    const never = new Promise<Outcome[]>(() => undefined);
    const handle = async (ms: readonly InboundMessage[]): Promise<Outcome[]> => {
      const body = ms[0]!.body.toString();
      if (body === 'm0') return never;
      handled.push(body);
      return [{ kind: 'ack' }];
    };
    const consumer = await t.broker.consume({ queue, prefetch: 10, retryDelaysMs: [200], handle });
    await waitFor('m1…m4 handled', () => handled.length === 4);
    await new Promise((r) => setTimeout(r, 100));
    await consumer.stop(200); // m0 is still in the handler: its channel closes with it unacked
    // The quorum queue takes m0 back after the broker has answered the close: wait for it briefly.
    const left = await waitForMessage(t.vhost.amqpUrl, queue, RETURN_WAIT_MS);
    expect(left.content.toString()).toBe('m0');
    expect(await takeMessage(t.vhost.amqpUrl, queue)).toBe(false);
  });

  it('acks a run of messages finished together, and the ones behind a slow one when it finishes', async () => {
    const bodies = Array.from({ length: 50 }, (_, i) => `k${i}`);
    const queue = await queueWith(bodies);
    let release: () => void = () => undefined;
    const slow = new Promise<void>((r) => (release = r));
    const handled = new Set<string>();
    // The batch k10 lands in: up to 5, however the deliveries happened to arrive.
    let slowBatch = 0;
    const handle = async (ms: readonly InboundMessage[]): Promise<Outcome[]> => {
      if (ms.some((m) => m.body.toString() === 'k10')) {
        slowBatch = ms.length;
        await slow;
      }
      for (const m of ms) handled.add(m.body.toString());
      return ms.map(() => ({ kind: 'ack' }));
    };
    const consumer = await t.broker.consume({ queue, prefetch: 50, batch: { maxSize: 5, maxWaitMs: 10 }, retryDelaysMs: [200], handle });
    await waitFor('all but the slow batch handled', () => slowBatch > 0 && handled.size === 50 - slowBatch);
    release();
    await waitFor('all handled', () => handled.size === 50);
    await consumer.stop(1000);
    // Every one acked: none comes back once the closed channel's unacknowledged ones would have.
    expect(await takeAllWithin(t.vhost.amqpUrl, queue)).toEqual([]);
  });
});
