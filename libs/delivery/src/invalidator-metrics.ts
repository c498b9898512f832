import { Counter, type Registry } from '@herald/runtime';

export interface InvalidatorMetrics {
  invalidations: Counter<'platform' | 'result'>;
}

export function createInvalidatorMetrics(registry: Registry): InvalidatorMetrics {
  return {
    invalidations: new Counter({
      name: 'herald_invalidations_total',
      help: 'Invalidations by result: invalidated, stale (re-registered since), unknown (no such device), parked',
      labelNames: ['platform', 'result'],
      registers: [registry],
    }),
  };
}
