import { commonConfig, int, intList, webhookResourceConfig } from '@herald/config';

export const fanoutConfig = {
  ...commonConfig,
  ...webhookResourceConfig,
  FANOUT_PREFETCH: int('Unacknowledged change events the webhook-fanout holds at once', { default: '200', min: 1 }),
  FANOUT_BATCH_SIZE: int('Change events matched against subscriptions with one database query', { default: '100', min: 1 }),
  FANOUT_BATCH_WAIT_MS: int('How long to wait to fill a batch before handling what arrived', { default: '5', min: 0 }),
  HERALD_RETRY_DELAYS_MS: intList('Retry schedule: the delay before each retry attempt, in ms', { default: '1000,5000,30000,120000,600000' }),
} as const;
