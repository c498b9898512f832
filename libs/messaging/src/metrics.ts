import { Counter, Gauge, type Registry } from '@herald/runtime';
import type { BrokerConnection } from './connection.ts';

export interface MessagingMetrics {
  consumed: Counter<'queue'>;
  acked: Counter<'queue'>;
  retried: Counter<'queue' | 'code'>;
  parked: Counter<'queue' | 'code'>;
  published: Counter<'exchange'>;
  handlerErrors: Counter<'queue'>;
  /** Batches in a consumer's hands now, by queue (herald_consumer_oldest_batch_seconds). */
  batches: BatchesInHand;
  /** The process's publishing connections (herald_broker_publishing_blocked_seconds); returns a function that stops watching one. */
  watchPublishing(connection: BrokerConnection): () => void;
}

/**
 * The batches every consumer of a process holds, by queue: herald_consumer_oldest_batch_seconds
 * reads the oldest at each scrape (0 when none). A batch stuck on a dependency that neither answers
 * nor fails (a hung query, a provider that accepts and never answers) shows here long before
 * RabbitMQ's consumer_timeout (30 minutes) closes its channel, while the queue's other consumers
 * keep its ack rate up and no queue alarm fires.
 */
export class BatchesInHand {
  private readonly byQueue = new Map<string, Set<{ since: number }>>();

  /** A batch taken now; call the result when it is settled. */
  take(queue: string): () => void {
    const entry = { since: Date.now() };
    let held = this.byQueue.get(queue);
    if (held === undefined) this.byQueue.set(queue, (held = new Set()));
    held.add(entry);
    return () => held.delete(entry);
  }

  oldestSeconds(): Array<{ queue: string; seconds: number }> {
    const now = Date.now();
    return [...this.byQueue].map(([queue, held]) => {
      let oldest = now;
      for (const b of held) oldest = Math.min(oldest, b.since);
      return { queue, seconds: (now - oldest) / 1000 };
    });
  }
}

/**
 * One `T` a registry, its gauge registered when it is made: every broker of a process shares both.
 * Without a registry, a fresh one that no gauge reads.
 */
function sharedPerRegistry<T>(made: WeakMap<Registry, T>, registry: Registry | undefined, make: () => T, register: (state: T, registry: Registry) => void): T {
  if (registry === undefined) return make();
  const known = made.get(registry);
  if (known !== undefined) return known;
  const state = make();
  made.set(registry, state);
  register(state, registry);
  return state;
}

const batchesOf = new WeakMap<Registry, BatchesInHand>();

function batchesInHand(registry: Registry | undefined): BatchesInHand {
  return sharedPerRegistry(batchesOf, registry, () => new BatchesInHand(), (batches, r) => {
    new Gauge({
      name: 'herald_consumer_oldest_batch_seconds',
      help: "How long the oldest batch a consumer of this process holds has been in its hands (0: none); a delay queue's relay holds each message until it is due",
      labelNames: ['queue'],
      registers: [r],
      collect() {
        for (const { queue, seconds } of batches.oldestSeconds()) this.set({ queue }, seconds);
      },
    });
  });
}

/** The publishing connections of every broker of a process: one gauge reads them all. */
const publishingOf = new WeakMap<Registry, Set<BrokerConnection>>();

function publishingConnections(registry: Registry | undefined): Set<BrokerConnection> {
  return sharedPerRegistry(publishingOf, registry, () => new Set<BrokerConnection>(), (connections, r) => {
    new Gauge({
      name: 'herald_broker_publishing_blocked_seconds',
      help: "How long RabbitMQ has blocked this process's publishes (connection.blocked: a memory or disk alarm); 0 when it does not. Its consumers keep acking on a connection of their own",
      registers: [r],
      collect() {
        const now = Date.now();
        let longest = 0;
        for (const c of connections) longest = Math.max(longest, (now - (c.blocked()?.since ?? now)) / 1000);
        this.set(longest);
      },
    });
  });
}

function counter<L extends string>(registry: Registry | undefined, name: string, help: string, labelNames: L[]): Counter<L> {
  const existing = registry?.getSingleMetric(name);
  if (existing) return existing as Counter<L>;
  return new Counter<L>({ name, help, labelNames, registers: registry ? [registry] : [] });
}

/** Counters registered on `registry` (re-used if another broker already registered them there). */
export function createMetrics(registry?: Registry): MessagingMetrics {
  return {
    consumed: counter(registry, 'herald_messages_consumed_total', 'Messages delivered to a handler', ['queue']),
    acked: counter(registry, 'herald_messages_acked_total', 'Messages acknowledged after handling', ['queue']),
    retried: counter(registry, 'herald_messages_retried_total', 'Messages sent to a retry delay queue', ['queue', 'code']),
    parked: counter(registry, 'herald_messages_parked_total', 'Messages parked in <queue>.parked', ['queue', 'code']),
    published: counter(registry, 'herald_messages_published_total', 'Messages published and confirmed', ['exchange']),
    batches: batchesInHand(registry),
    watchPublishing: (connection) => {
      const connections = publishingConnections(registry);
      connections.add(connection);
      return () => connections.delete(connection);
    },
    handlerErrors: counter(registry, 'herald_handler_errors_total', 'Batches whose handler failed for a reason not their messages\' own (broken infrastructure or a bug): requeued, or deferred, after a back-off. A message whose own value fails is retried (code message-error), not counted here', ['queue']),
  };
}
