import { commonConfig, int, retryScheduleConfig } from '@herald/config';

/** Settings both invalidators share (apns-invalidator, fcm-invalidator). */
export const invalidatorConfig = {
  ...commonConfig,
  INVALIDATOR_PREFETCH: int('Unacknowledged invalidations an invalidator holds at once', { default: '200', min: 1 }),
  INVALIDATOR_BATCH_SIZE: int('Invalidations applied together with one statement', { default: '100', min: 1 }),
  INVALIDATOR_BATCH_WAIT_MS: int('How long to wait to fill a batch', { default: '5', min: 0 }),
  ...retryScheduleConfig,
} as const;
