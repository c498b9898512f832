import { commonConfig, int, retryScheduleConfig, webhookResourceConfig } from '@herald/config';

export const fanoutConfig = {
  ...commonConfig,
  ...webhookResourceConfig,
  // Read first under names of the webhook-fanout's own: the demuxer reads FANOUT_PREFETCH too (audience
  // chunks, default 2), and one value in a ConfigMap shared by every service set both.
  FANOUT_PREFETCH: int('Unacknowledged change events the webhook-fanout holds at once (the older name; WEBHOOK_FANOUT_PREFETCH wins)', { default: '200', min: 1, alias: 'WEBHOOK_FANOUT_PREFETCH' }),
  FANOUT_BATCH_SIZE: int('Change events matched against subscriptions with one database query (the older name; WEBHOOK_FANOUT_BATCH_SIZE wins)', { default: '100', min: 1, alias: 'WEBHOOK_FANOUT_BATCH_SIZE' }),
  FANOUT_BATCH_WAIT_MS: int('How long to wait to fill a batch before handling what arrived (the older name; WEBHOOK_FANOUT_BATCH_WAIT_MS wins)', { default: '5', min: 0, alias: 'WEBHOOK_FANOUT_BATCH_WAIT_MS' }),
  ...retryScheduleConfig,
} as const;
