import { Counter, Histogram, type Registry } from '@herald/runtime';

export interface DeschedulerMetrics {
  pushes: Counter<'platform' | 'outcome'>;
  lag: Histogram<'platform'>;
  batches: Counter<'platform' | 'outcome'>;
}

export function createDeschedulerMetrics(registry: Registry): DeschedulerMetrics {
  return {
    pushes: new Counter({
      name: 'herald_descheduler_pushes_total',
      help: 'Scheduled pushes taken from the store, by outcome (released to the send queue; or dropped: expired, cancelled, opted-out, muted, left-audience)',
      labelNames: ['platform', 'outcome'],
      registers: [registry],
    }),
    lag: new Histogram({
      name: 'herald_descheduler_release_lag_seconds',
      help: 'Release time minus due time of released pushes',
      labelNames: ['platform'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 60, 300],
      registers: [registry],
    }),
    batches: new Counter({
      name: 'herald_descheduler_batches_total',
      help: 'Descheduler batches, by outcome (released, failed)',
      labelNames: ['platform', 'outcome'],
      registers: [registry],
    }),
  };
}
