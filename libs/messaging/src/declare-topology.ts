import type { Channel } from 'amqplib';
import type { Topology } from './topology.ts';

/**
 * Declares a topology on `channel`. Every declaration is an assert, so running it again (or from
 * several processes at once) changes nothing; a queue that exists with different arguments makes
 * the broker close the channel with PRECONDITION_FAILED, which rejects here with the queue's name.
 */
export async function declareTopology(channel: Channel, topology: Topology): Promise<void> {
  for (const e of topology.exchanges) {
    await channel.assertExchange(e.name, e.type, { durable: true, autoDelete: false });
  }
  for (const q of topology.queues) {
    try {
      await channel.assertQueue(q.name, { durable: true, autoDelete: false, exclusive: false, arguments: q.arguments });
    } catch (err) {
      throw new Error(`declaring queue "${q.name}" failed: ${(err as Error).message}`, { cause: err });
    }
    for (const b of q.bindings) {
      await channel.bindQueue(q.name, b.exchange, b.routingKey, b.arguments ?? {});
    }
  }
}
