import { Exchanges, Queues, delayQueueFor, parkedQueueFor, type WorkQueue } from '@herald/contracts';
import { delayQueuesOf } from './retry.ts';

export interface ExchangeSpec {
  name: string;
  type: 'topic' | 'headers' | 'direct' | 'fanout';
}

export interface BindingSpec {
  exchange: string;
  routingKey: string;
  arguments?: Record<string, unknown>;
}

/** Always declared durable; `arguments` carries x-queue-type and friends. */
export interface QueueSpec {
  name: string;
  arguments: Record<string, unknown>;
  bindings: readonly BindingSpec[];
}

export interface Topology {
  exchanges: readonly ExchangeSpec[];
  queues: readonly QueueSpec[];
}

export const DEFAULT_DELIVERY_LIMIT = 50;

const quorum = { 'x-queue-type': 'quorum' } as const;
/** Dead-letter without loss: the broker keeps the message until the target confirms. */
const atLeastOnce = { 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' } as const;

export function parkedQueueSpec(queue: string): QueueSpec {
  return { name: parkedQueueFor(queue), arguments: { ...quorum }, bindings: [] };
}

/** A work queue bound to `exchange` by its own name; a poison message is parked after `deliveryLimit` deliveries. */
export function workQueueSpec(queue: string, exchange: string, deliveryLimit = DEFAULT_DELIVERY_LIMIT): QueueSpec {
  return {
    name: queue,
    arguments: {
      ...quorum,
      ...atLeastOnce,
      'x-delivery-limit': deliveryLimit,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': parkedQueueFor(queue),
    },
    bindings: [{ exchange, routingKey: queue }],
  };
}

/**
 * Holds retried and deferred messages for `delayMs`: no TTL and no dead-lettering, because each
 * process that consumes with this delay also relays the queue (delay-relay.ts): it takes a message,
 * waits until its due time, publishes it back to its queue with a confirm, then acks it. (TTL with
 * at-least-once dead-lettering was used first, and RabbitMQ 3.10's dead-letter worker was seen to
 * lose its publishes to a quorum queue across a node loss and never send them again: docs/adr/0001.)
 * A message no relay can place (no return queue) is parked beside it.
 */
export function delayQueueSpec(delayMs: number): QueueSpec {
  return { name: delayQueueFor(delayMs), arguments: { ...quorum }, bindings: [] };
}

/** One delay queue (and its parked queue) per distinct delay, and one for the longest waits (delayQueuesOf). */
export function retryTopology(retryDelaysMs: readonly number[]): Topology {
  const delays = delayQueuesOf(retryDelaysMs);
  return { exchanges: [], queues: [...delays.map(delayQueueSpec), ...delays.map((d) => parkedQueueSpec(delayQueueFor(d)))] };
}

/** A topic exchange, a work queue bound to it, and the queue's parked queue. */
export function workQueueTopology(queue: string, exchange: string, opts: { deliveryLimit?: number } = {}): Topology {
  return {
    exchanges: [{ name: exchange, type: 'topic' }],
    queues: [workQueueSpec(queue, exchange, opts.deliveryLimit), parkedQueueSpec(queue)],
  };
}

/** Concatenates topologies, keeping the first declaration of each exchange and queue name. */
export function mergeTopologies(...parts: readonly Topology[]): Topology {
  const exchanges = new Map<string, ExchangeSpec>();
  const queues = new Map<string, QueueSpec>();
  for (const part of parts) {
    for (const e of part.exchanges) if (!exchanges.has(e.name)) exchanges.set(e.name, e);
    for (const q of part.queues) if (!queues.has(q.name)) queues.set(q.name, q);
  }
  return { exchanges: [...exchanges.values()], queues: [...queues.values()] };
}

/** Typed over WorkQueue so a new queue in contracts fails to compile until it is given an exchange. */
const EXCHANGE_OF_QUEUE: Record<WorkQueue, string> = {
  [Queues.jobs]: Exchanges.jobs,
  [Queues.fanout]: Exchanges.jobs,
  [Queues.apnsSend]: Exchanges.send,
  [Queues.fcmSend]: Exchanges.send,
  [Queues.webSend]: Exchanges.send,
  [Queues.apnsInvalidations]: Exchanges.invalidations,
  [Queues.fcmInvalidations]: Exchanges.invalidations,
  [Queues.webInvalidations]: Exchanges.invalidations,
  [Queues.registrations]: Exchanges.registrations,
  [Queues.changes]: Exchanges.changes,
  [Queues.webhookSend]: Exchanges.send,
};

/** Everything Herald needs, from the names in @herald/contracts. */
export function heraldTopology(opts: { retryDelaysMs: readonly number[]; deliveryLimit?: number }): Topology {
  const work = Object.entries(EXCHANGE_OF_QUEUE).map(([queue, exchange]) =>
    workQueueTopology(queue, exchange, { deliveryLimit: opts.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT }),
  );
  return mergeTopologies(...work, retryTopology(opts.retryDelaysMs));
}
