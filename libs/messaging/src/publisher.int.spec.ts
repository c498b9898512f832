import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@herald/testing';
import { BrokerConnectError, PublishFailedError, UnroutableError } from './errors.ts';
import { recordingHandler, startTestBroker, takeMessage, type TestBroker } from './test-helpers.ts';
import { workQueueTopology } from './topology.ts';
import { connectBroker } from './broker.ts';
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
