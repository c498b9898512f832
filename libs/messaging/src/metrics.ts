import { Counter, type Registry } from '@herald/runtime';

export interface MessagingMetrics {
  consumed: Counter<'queue'>;
  acked: Counter<'queue'>;
  retried: Counter<'queue' | 'code'>;
  parked: Counter<'queue' | 'code'>;
  published: Counter<'exchange'>;
  handlerErrors: Counter<'queue'>;
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
    handlerErrors: counter(registry, 'herald_handler_errors_total', 'handle() calls that threw', ['queue']),
  };
}
