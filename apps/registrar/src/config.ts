import { commonConfig, int, intList } from '@herald/config';

export const registrarConfig = {
  ...commonConfig,
  REGISTRAR_PREFETCH: int('Unacknowledged registrations held at once', { default: '200', min: 1 }),
  REGISTRAR_BATCH_SIZE: int('Registrations applied together', { default: '100', min: 1 }),
  REGISTRAR_BATCH_WAIT_MS: int('How long to wait to fill a batch', { default: '5', min: 0 }),
  HERALD_RETRY_DELAYS_MS: intList('Retry schedule: the delay before each retry attempt, in ms', { default: '1000,5000,30000,120000,600000' }),
  APP_CACHE_TTL_MS: int('How long app settings are cached', { default: '5000', min: 0 }),
  DEVICE_RETENTION_DAYS: int(
    'Dead devices (invalidated tokens, unregistered tombstones) nothing has changed for this many days are deleted, unless a stored scheduled push names them; registers stamped (eventAt) earlier than this are parked as too old to order (their tombstone may be gone). 0: never prune, no limit',
    { default: '90', min: 0 },
  ),
  DEVICE_PRUNE_INTERVAL_MS: int('How often a registrar prunes dead devices past DEVICE_RETENTION_DAYS (one registrar at a time, under an advisory lock)', { default: '3600000', min: 1000 }),
} as const;
