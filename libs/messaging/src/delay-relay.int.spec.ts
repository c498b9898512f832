import { delayQueueFor, parkedQueueFor } from '@herald/contracts';
import { Registry } from '@herald/runtime';
import { createTestVhost, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'amqplib';
import { connectBroker } from './broker.ts';
import { NO_RETURN_QUEUE } from './delay-relay.ts';
import { HeraldHeaders } from './headers.ts';
import { recordingHandler, silentLogger, startTestBroker, waitForCounts, waitForMessage, type TestBroker } from './test-helpers.ts';
import { DEFAULT_DELIVERY_LIMIT, mergeTopologies, retryTopology, workQueueTopology } from './topology.ts';

const DELAY_MS = 1_500;
const DELAYS = [DELAY_MS];

/**
 * Retried and deferred messages wait in a delay queue that the consuming processes relay back
 * (no TTL dead-lettering, see docs/adr/0001): what a relay that stops does with the messages it
 * holds, and what it does with one that names no queue to go back to.
 */
describe('delay queue relay', () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startTestBroker('msg-relay');
    await t.broker.applyTopology(mergeTopologies(workQueueTopology('d.work', 'd.exchange'), retryTopology(DELAYS)));
  });
  afterAll(() => t.teardown());

  it('a message waiting when its process stops stays in the delay queue, and another process sends it back when due, once', async () => {
    const first = await connectBroker({ url: t.vhost.amqpUrl, logger: silentLogger, connectionName: `${t.vhost.name}-first` });
    const retried: number[] = [];
    const firstHandler = recordingHandler(() => {
      retried.push(Date.now());
      return { kind: 'retry', code: 'transient', reason: 'try again' };
    });
    await first.consume({ queue: 'd.work', prefetch: 1, retryDelaysMs: DELAYS, handle: firstHandler.handle });
    await first.publisher.publish({ exchange: 'd.exchange', routingKey: 'd.work', body: Buffer.from('wait-for-me'), messageId: 'wait-for-me' });
    await waitFor('the retry decided', () => retried.length === 1);
    // The first process's relay holds the copy (unacked, none ready) until it is due; stop the process meanwhile.
    const delayQueue = delayQueueFor(DELAY_MS);
    await waitFor('the copy held by the relay', async () => (await t.broker.queueCounts([delayQueue])).get(delayQueue)?.consumers === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect((await t.broker.queueCounts([delayQueue])).get(delayQueue)).toEqual({ ready: 0, consumers: 1 });
    await first.close();
    await waitForCounts(t.broker, delayQueue, { ready: 1, consumers: 0 }, 'the copy back in the delay queue, nobody consuming');

    const arrivals: Array<{ at: number; attempt: number; headers: Record<string, unknown> }> = [];
    const second = recordingHandler((m) => {
      arrivals.push({ at: Date.now(), attempt: m.attempt, headers: m.headers });
      return { kind: 'ack' };
    });
    const consumer = await t.broker.consume({ queue: 'd.work', prefetch: 1, retryDelaysMs: DELAYS, handle: second.handle });
    await waitFor('the message back', () => arrivals.length === 1, { timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 500));
    await consumer.stop(1_000);

    expect(arrivals).toHaveLength(1);
    const [back] = arrivals;
    // Due 1,200–1,500 ms after the retry (20% jitter below the delay), never earlier.
    expect(back!.at - retried[0]!).toBeGreaterThanOrEqual(DELAY_MS * 0.8 - 20);
    expect(back!.attempt).toBe(2);
    expect(back!.headers).toMatchObject({ [HeraldHeaders.retryReason]: 'try again', [HeraldHeaders.delay]: DELAY_MS });
    expect(back!.headers[HeraldHeaders.returnTo]).toBeUndefined();
    expect(back!.headers[HeraldHeaders.dueAt]).toBeUndefined();
    expect((await t.broker.queueCounts([delayQueue])).get(delayQueue)?.ready).toBe(0);
  });

  it('a message due later than the longest hold goes round its delay queue, and is sent back once, when due', async () => {
    // Its own vhost: the relays this file's other broker started would compete for the delay queue.
    const vhost = await createTestVhost('msg-relay-hold');
    const registry = new Registry();
    const broker = await connectBroker({ url: vhost.amqpUrl, logger: silentLogger, connectionName: `${vhost.name}-hold`, metrics: registry, relayMaxHoldMs: 300 });
    try {
      await broker.applyTopology(mergeTopologies(workQueueTopology('h.work', 'h.exchange'), retryTopology(DELAYS)));
      let retriedAt = 0;
      const arrivals: Array<{ at: number; attempt: number; headers: Record<string, unknown> }> = [];
      const handler = recordingHandler((m) => {
        if (m.attempt === 1) {
          retriedAt = Date.now();
          return { kind: 'retry', code: 'transient', reason: 'later' };
        }
        arrivals.push({ at: Date.now(), attempt: m.attempt, headers: m.headers });
        return { kind: 'ack' };
      });
      await broker.consume({ queue: 'h.work', prefetch: 1, retryDelaysMs: DELAYS, handle: handler.handle });
      await broker.publisher.publish({ exchange: 'h.exchange', routingKey: 'h.work', body: Buffer.from('go-round'), messageId: 'go-round' });
      await waitFor('the message back', () => arrivals.length === 1, { timeoutMs: 10_000 });
      await new Promise((r) => setTimeout(r, 500));

      expect(arrivals).toHaveLength(1);
      const back = arrivals[0];
      if (back === undefined) throw new Error('no arrival');
      expect(back.at - retriedAt).toBeGreaterThanOrEqual(DELAY_MS * 0.8 - 20);
      expect(back.attempt).toBe(2);
      expect(back.headers[HeraldHeaders.returnTo]).toBeUndefined();
      expect(back.headers[HeraldHeaders.dueAt]).toBeUndefined();
      expect(back.headers[HeraldHeaders.waitMs]).toBeUndefined();
      // Held at most 300 ms at a time: taken from the delay queue once a hold (1,200–1,500 ms of delay), not once in all.
      const consumed = (await registry.getSingleMetric('herald_messages_consumed_total')?.get())?.values ?? [];
      const taken = consumed.find((v) => v.labels['queue'] === delayQueueFor(DELAY_MS))?.value ?? 0;
      expect(taken).toBeGreaterThanOrEqual(4);
      expect((await broker.queueCounts([delayQueueFor(DELAY_MS)])).get(delayQueueFor(DELAY_MS))?.ready).toBe(0);
    } finally {
      await broker.close();
      await vhost.delete();
    }
  });

  it("waits no longer than a message's wait, whatever the writer's clock said (a relay behind the writer held every retry that much longer), and sends one already due at once (a backlog drains)", async () => {
    // Its own vhost: the relays this file's other broker started would take the copy first.
    const vhost = await createTestVhost('msg-relay-skew');
    const broker = await connectBroker({ url: vhost.amqpUrl, logger: silentLogger, connectionName: `${vhost.name}-skew` });
    try {
      await broker.applyTopology(mergeTopologies(workQueueTopology('s.work', 's.exchange'), retryTopology(DELAYS)));
      const arrivals: Array<{ id: string; at: number; headers: Record<string, unknown> }> = [];
      const handler = recordingHandler((m) => (arrivals.push({ id: m.body.toString(), at: Date.now(), headers: m.headers }), { kind: 'ack' }));
      const consumer = await broker.consume({ queue: 's.work', prefetch: 2, retryDelaysMs: DELAYS, handle: handler.handle });
      const connection = await connect(vhost.amqpUrl);
      const channel = await connection.createChannel();
      const sentAt = Date.now();
      // Written by a host whose clock is ten minutes ahead of this relay's: by dueAt it waits ten minutes more.
      channel.sendToQueue(delayQueueFor(DELAY_MS), Buffer.from('skewed'), {
        messageId: 'skewed',
        headers: { [HeraldHeaders.returnTo]: 's.work', [HeraldHeaders.dueAt]: sentAt + 1_000 + 600_000, [HeraldHeaders.waitMs]: 1_000 },
      });
      // Due long ago (it waited in the delay queue): back at once, not after its whole wait again.
      channel.sendToQueue(delayQueueFor(DELAY_MS), Buffer.from('backlog'), {
        messageId: 'backlog',
        headers: { [HeraldHeaders.returnTo]: 's.work', [HeraldHeaders.dueAt]: sentAt - 60_000, [HeraldHeaders.waitMs]: 1_000 },
      });
      await channel.close();
      await connection.close();
      await waitFor('both back', () => arrivals.length === 2, { timeoutMs: 10_000 });
      await consumer.stop(1_000);
      const at = new Map(arrivals.map((a) => [a.id, a.at - sentAt]));
      expect(at.get('backlog')).toBeLessThan(800);
      expect(at.get('skewed')).toBeGreaterThanOrEqual(1_000 - 20);
      expect(arrivals.every((a) => a.headers[HeraldHeaders.waitMs] === undefined)).toBe(true);
    } finally {
      await broker.close();
      await vhost.delete();
    }
  });

  it('a message given back to its delay queue more times than the delivery limit (a relay crash-looping, its forward refused) is still sent back, not parked unrecorded', async () => {
    // Its own vhost: the relays this file's other broker started would take the copy first.
    const vhost = await createTestVhost('msg-relay-limit');
    const broker = await connectBroker({ url: vhost.amqpUrl, logger: silentLogger, connectionName: `${vhost.name}-limit` });
    const delayQueue = delayQueueFor(DELAY_MS);
    try {
      await broker.applyTopology(mergeTopologies(workQueueTopology('l.work', 'l.exchange'), retryTopology(DELAYS)));
      const connection = await connect(vhost.amqpUrl);
      const channel = await connection.createChannel();
      channel.sendToQueue(delayQueue, Buffer.from('given-back'), { messageId: 'given-back', headers: { [HeraldHeaders.returnTo]: 'l.work', [HeraldHeaders.dueAt]: Date.now() } });
      for (let i = 0; i <= DEFAULT_DELIVERY_LIMIT; i++) {
        const m = await waitFor('the copy', async () => (await channel.get(delayQueue, { noAck: false })) || undefined);
        channel.nack(m, false, true);
      }
      await connection.close();
      const arrivals: string[] = [];
      const handler = recordingHandler((m) => (arrivals.push(m.body.toString()), { kind: 'ack' }));
      const consumer = await broker.consume({ queue: 'l.work', prefetch: 1, retryDelaysMs: DELAYS, handle: handler.handle });
      await waitFor('the message back', () => arrivals.length === 1, { timeoutMs: 10_000 });
      await consumer.stop(1_000);
      expect(arrivals).toEqual(['given-back']);
      expect((await broker.queueCounts([parkedQueueFor(delayQueue)])).get(parkedQueueFor(delayQueue))?.ready).toBe(0);
    } finally {
      await broker.close();
      await vhost.delete();
    }
  });

  it('a message whose queue to go back to does not exist is parked beside its delay queue with the reason, not sent round for good', async () => {
    const consumer = await t.broker.consume({ queue: 'd.work', prefetch: 1, retryDelaysMs: DELAYS, handle: recordingHandler().handle });
    await t.broker.publisher.publish({
      exchange: '',
      routingKey: delayQueueFor(DELAY_MS),
      body: Buffer.from('orphan'),
      messageId: 'orphan',
      headers: { [HeraldHeaders.returnTo]: 'no.such.queue', [HeraldHeaders.dueAt]: Date.now() },
    });
    const parked = await waitForMessage(t.vhost.amqpUrl, parkedQueueFor(delayQueueFor(DELAY_MS)), 10_000);
    await consumer.stop(1_000);
    expect(parked.content.toString()).toBe('orphan');
    expect(parked.properties.headers).toMatchObject({ [HeraldHeaders.parkedCode]: NO_RETURN_QUEUE });
    expect(String(parked.properties.headers?.[HeraldHeaders.parkedReason])).toMatch(/"no\.such\.queue", does not exist/);
  });

  it('a message in a delay queue that names no queue to go back to is parked beside it with the reason', async () => {
    const consumer = await t.broker.consume({ queue: 'd.work', prefetch: 1, retryDelaysMs: DELAYS, handle: recordingHandler().handle });
    await t.broker.publisher.publish({ exchange: '', routingKey: delayQueueFor(DELAY_MS), body: Buffer.from('stray'), messageId: 'stray' });
    const parked = await waitForMessage(t.vhost.amqpUrl, parkedQueueFor(delayQueueFor(DELAY_MS)));
    await consumer.stop(1_000);
    expect(parked.content.toString()).toBe('stray');
    expect(parked.properties.headers).toMatchObject({ [HeraldHeaders.parkedCode]: NO_RETURN_QUEUE, [HeraldHeaders.originalQueue]: delayQueueFor(DELAY_MS) });
    expect(String(parked.properties.headers?.[HeraldHeaders.parkedReason])).toContain(HeraldHeaders.returnTo);
  });
});
