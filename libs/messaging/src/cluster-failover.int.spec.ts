/**
 * Failover on a real three-node RabbitMQ cluster (infra/local/rabbitmq-cluster.sh): connections
 * given the list of nodes move to a live one when theirs dies, quorum queues keep every confirmed
 * message, and a queue without a majority holds publishes (no confirm) instead of losing them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from '@herald/runtime';
import { startLocalCluster, waitFor, type ClusterNode, type LocalCluster } from '@herald/testing';
import { connectBroker, consumingConnectionName } from './broker.ts';
import { HeraldHeaders } from './headers.ts';
import { listParked, replayParked, ReplayError } from './parked.ts';
import { silentLogger } from './test-helpers.ts';
import { workQueueTopology } from './topology.ts';
import type { Broker, Consumer } from './types.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('on a three-node cluster', () => {
  let cluster: LocalCluster;
  let vhost: { name: string; delete(): Promise<void> };
  const brokers: Broker[] = [];
  const connect = async (name: string, url = cluster.amqpUrls(vhost.name), metrics?: Registry, confirmTimeoutMs?: number): Promise<Broker> => {
    const b = await connectBroker({ url, logger: silentLogger, connectionName: `${vhost.name}-${name}`, metrics, ...(confirmTimeoutMs !== undefined && { confirmTimeoutMs }) });
    brokers.push(b);
    return b;
  };

  beforeAll(async () => {
    cluster = await startLocalCluster();
    vhost = await cluster.createVhost('failover');
  }, 240_000);

  afterAll(async () => {
    if ((cluster as LocalCluster | undefined) !== undefined) await cluster.memoryAlarm(false).catch(() => undefined);
    await Promise.all(brokers.map((b) => b.close().catch(() => undefined)));
    if ((cluster as LocalCluster | undefined) === undefined) return; // not started: beforeAll's error says why
    for (const n of [1, 2, 3] as const) await cluster.startNode(n).catch(() => undefined);
    await vhost.delete();
  }, 240_000);

  it('connects through a list whose first node does not answer, and creates quorum queues with a replica on every node', async () => {
    const deadFirst = await connect('dead-first', `amqp://guest:guest@127.0.0.1:5799/${encodeURIComponent(vhost.name)},${cluster.nodeUrl(1, vhost.name)}`);
    await deadFirst.publisher.publish({ exchange: 'amq.fanout', routingKey: '', body: {} }).catch((err: Error) => expect(err.name).toBe('UnroutableError'));
    const broker = await connect('placer');
    await broker.applyTopology(workQueueTopology('fo.placed', 'fo.ex'));
    const res = await fetch(`${cluster.apiUrls.split(',')[0]?.replace('guest:guest@', '')}/queues/${encodeURIComponent(vhost.name)}/fo.placed`, {
      headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
    });
    const q = (await res.json()) as { members?: string[]; arguments?: Record<string, unknown> };
    expect(q.members).toHaveLength(3);
    expect(q.arguments?.['x-quorum-initial-group-size']).toBe(3);
    // A process given a single URL declares the same queue without placement arguments: accepted.
    const single = await connect('single', cluster.nodeUrl(2, vhost.name));
    await expect(single.applyTopology(workQueueTopology('fo.placed', 'fo.ex'))).resolves.toBeUndefined();
  });

  it('drains its queues through a memory alarm: a process whose publishes RabbitMQ holds still takes and acks deliveries, and a delivery waiting to publish holds only its own place', async () => {
    // RabbitMQ blocks a connection that publishes during an alarm: it stops reading from it, acks
    // included. Consumers on that connection would hold their deliveries (the memory) until the
    // alarm cleared, which their acks were needed for. Publishing has a connection of its own.
    const queue = 'fo.alarm';
    const feeder = await connect('alarm-feeder');
    await feeder.applyTopology(workQueueTopology(queue, 'fo.ex'));
    const total = 300;
    await Promise.all(Array.from({ length: total }, (_, i) => feeder.publisher.publish({ exchange: 'fo.ex', routingKey: queue, body: { i }, messageId: `a-${i}` })));
    // One message in each of five batches is sent to retry: its copy cannot be confirmed until the
    // alarm ends. Held with their batches, those five would take all 50 places (maxInFlight).
    const retried = new Set(['a-0', 'a-60', 'a-120', 'a-180', 'a-240']);
    const registry = new Registry();
    const blockedSeconds = async (): Promise<number | undefined> => (await registry.getSingleMetric('herald_broker_publishing_blocked_seconds')?.get())?.values[0]?.value;
    const service = await connect('alarm-service', undefined, registry);
    expect(await blockedSeconds()).toBe(0);
    const received = new Map<string, number>();
    let consumer: Consumer | undefined;
    await cluster.memoryAlarm(true);
    let held: Promise<void> | undefined;
    let heldConfirmed = false;
    try {
      held = service.publisher.publish({ exchange: 'fo.ex', routingKey: queue, body: { held: true }, messageId: 'held' }).then(() => void (heldConfirmed = true));
      await sleep(1_000);
      expect(heldConfirmed).toBe(false); // the alarm holds: the service's publishing connection is blocked
      // RabbitMQ tells the connection it blocks it (connection.blocked); the gauge shows for how long.
      await waitFor('the publishing connection reported blocked', async () => ((await blockedSeconds()) ?? 0) > 0, { timeoutMs: 10_000 });
      const consuming = service.consume({
        queue,
        prefetch: 50,
        maxInFlight: 50,
        batch: { maxSize: 10, maxWaitMs: 5 },
        retryDelaysMs: [500],
        handle: async (msgs) =>
          msgs.map((m) => {
            const id = m.messageId ?? '';
            received.set(id, (received.get(id) ?? 0) + 1);
            return retried.has(id) && received.get(id) === 1 ? { kind: 'retry' as const, code: 'test', reason: 'sent to retry once' } : { kind: 'ack' as const };
          }),
      });
      // With a prefetch of 50, taking all 300 means RabbitMQ read at least 250 acks during the alarm.
      await waitFor('every message taken during the alarm', () => received.size === total, { timeoutMs: 30_000 });
      consumer = await consuming;
      expect(heldConfirmed).toBe(false);
      expect([...retried].every((id) => received.get(id) === 1)).toBe(true); // their copies wait for the alarm's end
      // A publisher with a deadline (the HTTP API's): its first publish learns of the block when the
      // deadline passes; after that each publish is refused at once, not queued in the process.
      const withDeadline = await connect('alarm-api', undefined, undefined, 1_500);
      await expect(withDeadline.publisher.publish({ exchange: 'fo.ex', routingKey: queue, body: {}, messageId: 'api-1' })).rejects.toThrow(/no confirm within 1500 ms/);
      await waitFor('the API connection reported blocked', async () => {
        const refused = await withDeadline.publisher.publish({ exchange: 'fo.ex', routingKey: queue, body: {}, messageId: 'api-2' }).then(() => undefined, (err: unknown) => err as Error);
        return refused?.name === 'BrokerUnavailableError' ? refused : undefined;
      }, { timeoutMs: 10_000 });
      const started = Date.now();
      await expect(withDeadline.publisher.publish({ exchange: 'fo.ex', routingKey: queue, body: {}, messageId: 'api-3' })).rejects.toThrow(/^RabbitMQ is blocking publishers \(.+\); message not published$/);
      expect(Date.now() - started).toBeLessThan(200);
      // And it closes during the alarm (a client library's close() waited for the alarm's end).
      const closing = Date.now();
      await withDeadline.close();
      expect(Date.now() - closing).toBeLessThan(2_000);
    } finally {
      await cluster.memoryAlarm(false);
    }
    await held;
    await waitFor('the retried messages back and the held one taken', () => [...retried].every((id) => received.get(id) === 2) && received.get('held') === 1, { timeoutMs: 30_000 });
    await consumer.stop(5_000);
    expect((await feeder.queueCounts([queue])).get(queue)?.ready).toBe(0);
    expect([...received.values()].every((n) => n <= 2)).toBe(true);
    expect(await blockedSeconds()).toBe(0);
  }, 120_000);

  it('replays parked messages through a memory alarm without hanging: it stops when RabbitMQ blocks the copies, leaves the rest parked, and replays them after', async () => {
    const queue = 'fo.replay';
    const ids = ['r-1', 'r-2', 'r-3', 'r-4', 'r-5'];
    const setup = await connect('replay-setup');
    await setup.applyTopology(workQueueTopology(queue, 'fo.ex'));
    const headers = { [HeraldHeaders.parkedCode]: 'retries-exhausted', [HeraldHeaders.originalQueue]: queue };
    await Promise.all(ids.map((id) => setup.publisher.publish({ exchange: '', routingKey: `${queue}.parked`, body: { id }, messageId: id, headers })));
    const opts = { url: cluster.amqpUrls(vhost.name), logger: silentLogger, queue };
    const api = `${cluster.apiUrls.split(',')[0]?.replace('guest:guest@', '')}/vhosts/${encodeURIComponent(vhost.name)}/connections`;
    const connectionNames = async (): Promise<string[]> => {
      const res = await fetch(api, { headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` } });
      return ((await res.json()) as { client_properties?: { connection_name?: string } }[]).map((c) => c.client_properties?.connection_name ?? '');
    };
    let replayedInAlarm: number;
    await cluster.memoryAlarm(true);
    try {
      const started = Date.now();
      const err = await replayParked({ ...opts, filter: { kind: 'all' } }).catch((e: unknown) => e);
      // Not the 30 s confirm deadline: RabbitMQ's connection.blocked ended the wait.
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(err).toBeInstanceOf(ReplayError);
      expect((err as ReplayError).message).toMatch(/not replayed \(left parked\)(, \d+ not looked at \(still parked\))?: no confirm \(RabbitMQ is blocking publishes: /);
      replayedInAlarm = (err as ReplayError).replayed;
      // The ones it could not confirm are parked again, where a list (which does not publish) finds them during the alarm.
      const stillParked = (await listParked(opts)).messages.map((m) => m.messageId);
      expect(stillParked.length).toBeGreaterThan(0);
      expect(stillParked.length + replayedInAlarm).toBe(ids.length);
    } finally {
      await cluster.memoryAlarm(false);
    }
    // Once the alarm ends the dropped copies' connection goes, and a replay moves the rest.
    await waitFor('the replay\'s copies connection gone', async () => !(await connectionNames()).some((n) => n.startsWith('herald-parked')), { timeoutMs: 20_000 });
    const after = await replayParked({ ...opts, filter: { kind: 'all' } });
    expect(after.replayed).toBe(ids.length - replayedInAlarm);
    expect((await listParked(opts)).messages).toEqual([]);
    const consumer = await connect('replay-reader');
    const arrived = new Map<string, number>();
    const reading = await consumer.consume({
      queue,
      prefetch: 20,
      retryDelaysMs: [1000],
      handle: async (msgs) => msgs.map((m) => (arrived.set(m.messageId ?? '', (arrived.get(m.messageId ?? '') ?? 0) + 1), { kind: 'ack' as const })),
    });
    await waitFor('every parked message in its queue again', () => ids.every((id) => arrived.has(id)), { timeoutMs: 20_000 });
    await reading.stop(5_000);
    // A copy RabbitMQ took after the alarm may be there beside the later replay's: at most two of each.
    expect([...arrived.values()].every((n) => n <= 2)).toBe(true);
  }, 120_000);

  it('loses no confirmed message when the node leading the queue is SIGKILLed mid-flow; clients move to live nodes', async () => {
    const queue = 'fo.flow';
    const producer = await connect('producer');
    const consumerBroker = await connect('consumer');
    await producer.applyTopology(workQueueTopology(queue, 'fo.ex'));
    const received = new Map<string, number>();
    const consumer: Consumer = await consumerBroker.consume({
      queue,
      prefetch: 50,
      retryDelaysMs: [1000],
      handle: async (msgs) => {
        for (const m of msgs) received.set(m.messageId ?? '', (received.get(m.messageId ?? '') ?? 0) + 1);
        return msgs.map(() => ({ kind: 'ack' as const }));
      },
    });
    const total = 1500;
    const confirmed = new Set<string>();
    let failures = 0;
    // The caller's side of the contract: a publish that was not confirmed is published again.
    const publishAll = async (): Promise<void> => {
      for (let i = 0; i < total; i++) {
        const id = `m-${i}`;
        for (;;) {
          try {
            await producer.publisher.publish({ exchange: 'fo.ex', routingKey: queue, body: { i }, messageId: id });
            confirmed.add(id);
            break;
          } catch {
            failures++;
            await sleep(100);
          }
        }
        if (i % 10 === 9) await sleep(5); // about 1,000 messages/s at most
      }
    };
    const publishing = publishAll();
    await waitFor('a third published', () => confirmed.size >= total / 3, { timeoutMs: 60_000 });
    const killed = await cluster.leaderOf(vhost.name, queue);
    const killedAt = Date.now();
    await cluster.kill(killed);
    await publishing;
    await waitFor('every confirmed message consumed', () => [...confirmed].every((id) => received.has(id)), { timeoutMs: 120_000 });
    const duplicates = [...received.values()].filter((n) => n > 1).length;
    const newLeader = await cluster.leaderOf(vhost.name, queue);
    console.log(JSON.stringify({ killed, newLeader, confirmed: confirmed.size, received: received.size, duplicates, publishFailures: failures, recoveredAfterMs: Date.now() - killedAt }));
    expect(confirmed.size).toBe(total);
    expect([...confirmed].filter((id) => !received.has(id))).toEqual([]);
    expect(newLeader).not.toBe(killed);
    for (const name of [`${vhost.name}-producer`, `${vhost.name}-consumer`, consumingConnectionName(`${vhost.name}-consumer`)]) {
      expect(await cluster.nodeOfConnection(name)).not.toBe(killed);
    }
    await consumer.stop(5_000);
    await cluster.startNode(killed);
  }, 300_000);

  it('confirms nothing while two of three nodes are down (publishes held or refused, a refused publisher backs off instead of spinning) and takes the message once a node returns', async () => {
    const queue = 'fo.majority';
    const producer = await connect('holder');
    await producer.applyTopology(workQueueTopology(queue, 'fo.ex'));
    const survivor = (await cluster.nodeOfConnection(`${vhost.name}-holder`)) ?? 1;
    const down = ([1, 2, 3] as const).filter((n) => n !== survivor);
    await Promise.all(down.map((n) => cluster.stopNode(n)));
    // The caller's side: publish again whatever was not confirmed, as Herald's consumers do (a
    // consumer whose connection is down waits for it: here 100 ms between such attempts).
    let nacked = 0;
    let confirmedAt: number | undefined;
    const errors = new Set<string>();
    const holding = (async () => {
      for (;;) {
        try {
          await producer.publisher.publish({ exchange: 'fo.ex', routingKey: queue, body: { held: true }, messageId: 'held-1' });
          confirmedAt = Date.now();
          return;
        } catch (err) {
          errors.add((err as Error).name);
          if ((err as Error).name === 'PublishFailedError') nacked++;
          else await sleep(100);
        }
      }
    })();
    await sleep(5_000);
    const nackedWhileDown = nacked;
    expect(confirmedAt).toBeUndefined();
    const back = down[0] as ClusterNode;
    const backAt = Date.now();
    await cluster.startNode(back);
    await holding;
    console.log(JSON.stringify({ survivor, stopped: down, nackedWhileDown, errors: [...errors], confirmedAfterNodeReturnedMs: (confirmedAt ?? NaN) - backAt }));
    // The publisher pauses 0.1, 0.2, 0.4 … 5 s after nacks: a handful in 5 s, not thousands.
    expect(nackedWhileDown).toBeLessThan(20);
    expect((await producer.queueCounts([queue])).get(queue)?.ready).toBe(1);
    await cluster.startNode(down[1] as ClusterNode);
  }, 300_000);

  it('starts again after a full stop when the node the others wait for crashes as it boots', async () => {
    for (const n of [1, 2, 3] as const) await cluster.startNode(n);
    // Node 2 stops last, so at the next start nodes 1 and 3 wait for its tables (RabbitMQ waits
    // 10 × 30 s), alive and not up. A node of a formed cluster can crash at boot (RabbitMQ 3.10,
    // syncing feature flags): here node 2 is SIGKILLed as soon as its runtime is there.
    for (const n of [1, 3, 2] as const) await cluster.stopNode(n);
    const starting = cluster.start();
    await waitFor('node 2 killed as it boots', () => cluster.kill(2).then(() => true, () => false), { timeoutMs: 30_000, intervalMs: 100 });
    const { report } = await starting;
    expect(report).toContain('node herald-2 stopped while booting; starting it again (1)');
    expect((await cluster.runningNodes()).sort((a, b) => a - b)).toEqual([1, 2, 3]);
  }, 300_000);
});
