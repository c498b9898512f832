import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestVhost, startTcpProxyFor, waitFor, type TcpProxy, type TestVhost } from '@herald/testing';
import { connectBroker } from './broker.ts';
import { PublishNotSentError, coalescedPublish } from './coalesced-publish.ts';
import { BrokerUnavailableError, PublishFailedError, UnroutableError } from './errors.ts';
import { PACKED_CONTENT_TYPE } from './pack.ts';
import { recordingHandler, silentLogger, startTestBroker, takeAllWithin, takeMessage, waitForMessage, type TestBroker } from './test-helpers.ts';
import { workQueueTopology } from './topology.ts';
import type { Broker, InboundMessage, OutboundMessage } from './types.ts';

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

describe('coalescedPublish in front of a broker that stops answering (callTimeoutMs)', () => {
  let vhost: TestVhost;
  let proxy: TcpProxy;
  let broker: Broker;
  const call = (id: string): OutboundMessage => ({ exchange: 'cps.exchange', routingKey: 'cps.work', body: { id }, messageId: id });
  beforeAll(async () => {
    vhost = await createTestVhost('msg-coalesced-stall');
    proxy = await startTcpProxyFor(vhost.amqpUrl);
    broker = await connectBroker({ url: proxy.urlFor(vhost.amqpUrl), logger: silentLogger, connectionName: `${vhost.name}-stall` });
    await broker.applyTopology(workQueueTopology('cps.work', 'cps.exchange'));
  });
  afterAll(async () => {
    proxy.thaw();
    await broker.close();
    await proxy.close();
    await vhost.delete();
  });

  it('rejects a call its timeout left out of its round as not sent (a BrokerUnavailableError), one whose round started as unconfirmed: only that one arrives', async () => {
    const publish = coalescedPublish(broker.publisher, { callTimeoutMs: 300 });
    await publish(call('warm'));
    proxy.freeze();
    let settled: PromiseSettledResult<void>[];
    try {
      const sent = publish(call('sent'));
      // Its round starts at the end of this turn and gets no confirm; a call made after it waits behind it.
      await new Promise((resolve) => setTimeout(resolve, 50));
      settled = await Promise.allSettled([sent, publish(call('waiting'))]);
    } finally {
      proxy.thaw();
    }
    const [sent, waiting] = settled.map((s) => (s.status === 'rejected' ? (s.reason as Error) : undefined));
    expect(sent).toBeInstanceOf(PublishFailedError);
    expect(sent?.message).toMatch(/not confirmed: no confirm within 300 ms .*the message may still arrive/);
    expect(waiting).toBeInstanceOf(PublishNotSentError);
    expect(waiting).toBeInstanceOf(BrokerUnavailableError);
    expect(waiting?.message).toMatch(/not sent: .*it was left out, nothing of it will arrive/);
    // A call after the thaw goes once the stalled round ended: the left-out call was not sent meanwhile.
    await publish(call('after'));
    const ids = (await takeAllWithin(vhost.amqpUrl, 'cps.work', 500)).map((body) => (JSON.parse(body) as { id: string }).id);
    expect(ids).toEqual(['warm', 'sent', 'after']);
  });
});
