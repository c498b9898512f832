import { commonConfig, int, pushPackConfig } from '@herald/config';

/** Settings both deschedulers share. */
export const deschedulerConfig = {
  ...commonConfig,
  ...pushPackConfig,
  DESCHEDULER_BATCH_SIZE: int('Due pushes claimed, published and deleted together (one transaction)', { default: '500', min: 1 }),
  DESCHEDULER_CONCURRENCY: int('Batches in flight at once per descheduler (each its own transaction; SKIP LOCKED keeps them apart)', {
    default: '2',
    min: 1,
    max: 16,
  }),
  DESCHEDULER_RECHECK_MS: int('Longest sleep between looks at the store (a safety net behind LISTEN/NOTIFY)', {
    default: '30000',
    min: 100,
  }),
  DESCHEDULER_ERROR_BACKOFF_MS: int('Wait after a failed batch (database or broker down) before trying again', { default: '1000', min: 10 }),
  DESCHEDULER_HELD_BATCH_TIMEOUT_MS: int(
    "Longest a batch's transaction may wait idle (its descheduler gone, or waiting for RabbitMQ's confirms): PostgreSQL then rolls it back and another descheduler releases its pushes",
    { default: '300000', min: 1000 },
  ),
} as const;
