import { commonConfig, int, retryScheduleConfig } from '@herald/config';

export const registrarConfig = {
  ...commonConfig,
  REGISTRAR_PREFETCH: int('Unacknowledged registrations held at once', { default: '200', min: 1 }),
  REGISTRAR_BATCH_SIZE: int('Registrations applied together', { default: '100', min: 1 }),
  REGISTRAR_BATCH_WAIT_MS: int('How long to wait to fill a batch', { default: '5', min: 0 }),
  ...retryScheduleConfig,
  APP_CACHE_TTL_MS: int('How long app settings are cached', { default: '5000', min: 0 }),
  DEVICE_RETENTION_DAYS: int(
    "Devices whose token a provider declared dead and that nothing has changed for this many days are deleted (an unregister's tombstone is kept). 0: never",
    { default: '90', min: 0 },
  ),
  DEVICE_PRUNE_INTERVAL_MS: int(
    "How often each registrar prunes dead devices past DEVICE_RETENTION_DAYS, and expired mutes (registrars side by side skip each other's rows)",
    { default: '3600000', min: 1000 },
  ),
  TOPIC_MEMBER_SWEEP_INTERVAL_MS: int(
    "How often each registrar removes the memberships left of deleted topics (a deletion's background removal cut short by the API's stop or crash; registrars side by side skip each other's rows)",
    { default: '300000', min: 1000 },
  ),
} as const;
