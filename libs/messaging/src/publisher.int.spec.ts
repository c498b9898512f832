import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestVhost, startTcpProxyFor, waitFor, type TcpProxy, type TestVhost } from '@herald/testing';
import { BrokerConnectError, PublishFailedError, UnroutableError } from './errors.ts';
import { recordingHandler, startTestBroker, takeMessage, type TestBroker } from './test-helpers.ts';
import { workQueueTopology } from './topology.ts';
import { connectBroker } from './broker.ts';
import { coalescedPublish } from './coalesced-publish.ts';
import type { Broker } from './types.ts';
import { silentLogger } from './test-helpers.ts';

describe('publisher', () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startTestBroker('msg-pub');
    await t.broker.applyTopology(workQueueTopology('t.work', 't.exchange'));
  });
  afterAll(() => t.teardown());

  it('publishes persistent JSON with confirms; a consumer receives and acks it', async () => {
    await t.broker.publisher.publish({ exchange: 't.exchange', routingKey: 't.work', body: { hello: 'world' }, messageId: 'm-1', headers: { 'x-k': 'v' } });
    const raw = await takeMessage(t.vhost.amqpUrl, 't.work');
    expect(raw && JSON.parse(raw.content.toString())).toEqual({ hello: 'world' });
    expect(raw && raw.properties.deliveryMode).toBe(2);
    expect(raw && raw.properties.contentType).toBe('application/json');

    const h = recordingHandler();
    const consumer = await t.broker.consume({ queue: 't.work', prefetch: 5, retryDelaysMs: [200], handle: h.handle });
    await t.broker.publisher.publishMany([
      { exchange: 't.exchange', routingKey: 't.work', body: Buffer.from('a'), messageId: 'm-a' },
      { exchange: 't.exchange', routingKey: 't.work', body: Buffer.from('b') },
    ]);
    await waitFor('two deliveries', () => h.seen.length === 2);
    expect(h.seen.map((m) => m.body.toString()).sort()).toEqual(['a', 'b']);
    const a = h.seen.find((m) => m.body.toString() === 'a');
    expect(a).toMatchObject({ messageId: 'm-a', attempt: 1, redelivered: false, queue: 't.work', routingKey: 't.work' });
    expect(h.calls.every((n) => n === 1)).toBe(true);
    await consumer.stop(1000);
    expect(await takeMessage(t.vhost.amqpUrl, 't.work')).toBe(false); // acked, not requeued
  });

  it('rejects a publish that no queue is bound for', async () => {
    const p = t.broker.publisher.publish({ exchange: 't.exchange', routingKey: 'nobody.listens', body: {} });
    await expect(p).rejects.toBeInstanceOf(UnroutableError);
    await expect(p).rejects.toThrow(/nobody\.listens/);
  });

  it('fails only the unroutable message of a batch and still delivers the others', async () => {
    const p = t.broker.publisher.publishMany([
      { exchange: 't.exchange', routingKey: 't.work', body: Buffer.from('ok') },
      { exchange: 't.exchange', routingKey: 'nowhere', body: Buffer.from('lost') },
    ]);
    await expect(p).rejects.toBeInstanceOf(UnroutableError);
    const raw = await takeMessage(t.vhost.amqpUrl, 't.work');
    expect(raw && raw.content.toString()).toBe('ok');
  });

  it('rejects a publish to a missing exchange, and the publisher keeps working afterwards', async () => {
    await expect(t.broker.publisher.publish({ exchange: 'no.such.exchange', routingKey: 'x', body: {} })).rejects.toBeInstanceOf(PublishFailedError);
    await t.broker.publisher.publish({ exchange: 't.exchange', routingKey: 't.work', body: Buffer.from('after') });
    const raw = await takeMessage(t.vhost.amqpUrl, 't.work');
    expect(raw && raw.content.toString()).toBe('after');
  });

  it('fails fast with a clear error when the first connection fails', async () => {
    const bad = connectBroker({ url: 'amqp://guest:secret@127.0.0.1:5672/herald-no-such-vhost', logger: silentLogger, connectionName: 'bad' });
    await expect(bad).rejects.toBeInstanceOf(BrokerConnectError);
    await expect(bad).rejects.toThrow(/cannot connect to RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1/);
  });
});

describe('publisher in front of a broker that stops answering', () => {
  let vhost: TestVhost;
  let proxy: TcpProxy;
  const brokers: Broker[] = [];
  const through = async (confirmTimeoutMs?: number): Promise<Broker> => {
    const broker = await connectBroker({ url: proxy.urlFor(vhost.amqpUrl), logger: silentLogger, connectionName: `${vhost.name}-${brokers.length}`, confirmTimeoutMs });
    brokers.push(broker);
    await broker.applyTopology(workQueueTopology('t.work', 't.exchange'));
    return broker;
  };
  beforeAll(async () => {
    vhost = await createTestVhost('msg-pub-deadline');
    proxy = await startTcpProxyFor(vhost.amqpUrl);
  });
  afterAll(async () => {
    proxy.thaw();
    await Promise.all(brokers.map((b) => b.close().catch(() => undefined)));
    await proxy.close();
    await vhost.delete();
  });

  it('rejects a publish not confirmed within confirmTimeoutMs, saying it may still arrive; without a deadline it waits for the confirm', async () => {
    const answering = await through(300);
    const fresh = await through(300);
    const patient = await through();
    await answering.publisher.publish({ exchange: 't.exchange', routingKey: 't.work', body: Buffer.from('warm') });
    proxy.freeze();
    const started = Date.now();
    const waiting = patient.publisher.publish({ exchange: 't.exchange', routingKey: 't.work', body: Buffer.from('patient'), messageId: 'p-1' });
    let patientSettled = false;
    void waiting.finally(() => (patientSettled = true)).catch(() => undefined);
    const refused = answering.publisher.publish({ exchange: 't.exchange', routingKey: 't.work', body: Buffer.from('late'), messageId: 'l-1' });
    await expect(refused).rejects.toBeInstanceOf(PublishFailedError);
    await expect(refused).rejects.toThrow(/no confirm within 300 ms \(no answer from RabbitMQ\); the message may still arrive/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    // A publisher whose channel is not open yet waits for the broker to open one: the same deadline.
    await expect(fresh.publisher.publish({ exchange: 't.exchange', routingKey: 't.work', body: Buffer.from('fresh') })).rejects.toThrow(
      /not published: no confirm within 300 ms \(no answer from RabbitMQ\)/,
    );
    // The services' publisher (no deadline) still waits: its delivery is held until the broker answers.
    await new Promise((r) => setTimeout(r, 300));
    expect(patientSettled).toBe(false);
    proxy.thaw();
    await waiting;
    // Both reached the queue: the refused one was only unconfirmed, as its error says.
    const bodies = new Set<string>();
    await waitFor('both messages in the queue', async () => {
      const m = await takeMessage(vhost.amqpUrl, 't.work');
      if (m) bodies.add(m.content.toString());
      return bodies.size === 3;
    });
    expect([...bodies].sort()).toEqual(['late', 'patient', 'warm']);
    // The confirm that came after the deadline settled nothing twice; the publisher keeps working.
    await answering.publisher.publish({ exchange: 't.exchange', routingKey: 't.work', body: Buffer.from('after') });
  });

  it('bounds each coalesced call from when it was made: calls queued behind a round that gets no confirm do not wait for it first', async () => {
    const broker = await through(300);
    await broker.publisher.publish({ exchange: 't.exchange', routingKey: 't.work', body: Buffer.from('warm') });
    // One call a round, rounds one at a time (as the API's job publishing under a blocked broker).
    const publish = coalescedPublish(broker.publisher, { maxBatch: 1, callTimeoutMs: 300 });
    proxy.freeze();
    try {
      const started = Date.now();
      const settled = await Promise.allSettled([1, 2, 3].map((n) => publish({ exchange: 't.exchange', routingKey: 't.work', body: { n }, messageId: `c-${n}` })));
      // Without the bound per call: the third waited for two rounds first, about 900 ms.
      expect(Date.now() - started).toBeLessThan(700);
      for (const s of settled) {
        expect(s.status).toBe('rejected');
        expect(String((s as PromiseRejectedResult).reason)).toMatch(/no confirm within 300 ms/);
      }
    } finally {
      proxy.thaw();
    }
  });
});
