import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queues, WorkQueues, delayQueueFor, parkedQueueFor } from '@herald/contracts';
import { queueInfo } from '@herald/testing';
import { connectBroker } from './broker.ts';
import { silentLogger, startTestBroker, takeMessage, type TestBroker } from './test-helpers.ts';
import { heraldTopology, workQueueSpec } from './topology.ts';

const DELAYS = [1000, 5000, 30_000];

describe('topology', () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startTestBroker('msg-topology');
  });
  afterAll(() => t.teardown());

  it('applies the Herald topology repeatedly and concurrently without error', async () => {
    const other = await connectBroker({ url: t.vhost.amqpUrl, logger: silentLogger, connectionName: `${t.vhost.name}-other` });
    try {
      const topology = heraldTopology({ retryDelaysMs: DELAYS });
      await Promise.all([t.broker.applyTopology(topology), other.applyTopology(topology), t.broker.applyTopology(topology)]);
      await t.broker.applyTopology(topology);
    } finally {
      await other.close();
    }
    for (const q of [...WorkQueues, ...WorkQueues.map(parkedQueueFor), ...DELAYS.map(delayQueueFor)]) {
      expect(await queueInfo(t.vhost.name, q), q).toBeDefined();
    }
  });

  it('routes every work queue from its exchange by its own name', async () => {
    await t.broker.publisher.publish({ exchange: 'push.send', routingKey: Queues.fcmSend, body: { n: 1 } });
    await t.broker.publisher.publish({ exchange: 'push.invalidations', routingKey: Queues.apnsInvalidations, body: { n: 2 } });
    expect(await takeMessage(t.vhost.amqpUrl, Queues.fcmSend)).toBeTruthy();
    expect(await takeMessage(t.vhost.amqpUrl, Queues.apnsInvalidations)).toBeTruthy();
    expect(await takeMessage(t.vhost.amqpUrl, Queues.apnsSend)).toBe(false);
  });

  it('rejects, naming the queue, when an existing queue has different arguments', async () => {
    const clash = { exchanges: [], queues: [{ ...workQueueSpec(Queues.jobs, 'push.jobs', 7), bindings: [] }] };
    await expect(t.broker.applyTopology(clash)).rejects.toThrow(/push\.jobs.*PRECONDITION_FAILED/);
    // the broker stays usable afterwards
    await t.broker.applyTopology(heraldTopology({ retryDelaysMs: DELAYS }));
  });
});
