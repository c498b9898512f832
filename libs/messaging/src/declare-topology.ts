import type { Channel } from 'amqplib';
import type { Topology } from './topology.ts';

/**
 * Where new quorum queues put their replicas and leaders (only at creation; RabbitMQ checks the
 * arguments again on every later declaration). Empty on a single node.
 */
export type QueuePlacement = Record<string, unknown>;

/** The arguments that only place a new queue's replicas and leader. */
const PLACEMENT_ARGS = ['x-quorum-initial-group-size', 'x-queue-leader-locator'];

/** On a cluster of `nodes` listed nodes: a replica on each, leaders spread evenly across them. */
export function placementFor(nodes: number): QueuePlacement {
  if (nodes <= 1) return {};
  return { 'x-quorum-initial-group-size': nodes, 'x-queue-leader-locator': 'balanced' };
}

/**
 * Declares a topology. Every declaration is an assert, so running it again (or from several
 * processes at once) changes nothing; a queue that exists with different arguments makes the
 * broker close the channel with PRECONDITION_FAILED, which rejects here with the queue's name.
 * The placement arguments are the exception: a quorum queue created with other ones (by a process
 * given one broker URL while others were given the list, or before the cluster grew) keeps its
 * placement; it is then only checked to exist, on a fresh channel.
 */
export async function declareTopology(openChannel: () => Promise<Channel>, topology: Topology, placement: QueuePlacement = {}): Promise<void> {
  let channel = await openChannel();
  try {
    for (const e of topology.exchanges) {
      await channel.assertExchange(e.name, e.type, { durable: true, autoDelete: false });
    }
    for (const q of topology.queues) {
      const quorum = q.arguments['x-queue-type'] === 'quorum';
      const args = quorum ? { ...q.arguments, ...placement } : q.arguments;
      try {
        await channel.assertQueue(q.name, { durable: true, autoDelete: false, exclusive: false, arguments: args });
      } catch (err) {
        const message = (err as Error).message;
        if (!quorum || !PLACEMENT_ARGS.some((arg) => message.includes(`inequivalent arg '${arg}'`))) {
          throw new Error(`declaring queue "${q.name}" failed: ${message}`, { cause: err });
        }
        await channel.close().catch(() => undefined);
        channel = await openChannel();
        await channel.checkQueue(q.name);
      }
      for (const b of q.bindings) {
        await channel.bindQueue(q.name, b.exchange, b.routingKey, b.arguments ?? {});
      }
    }
  } finally {
    await channel.close().catch(() => undefined);
  }
}
