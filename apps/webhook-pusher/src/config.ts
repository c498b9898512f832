import { bool, commonConfig, int } from '@herald/config';
import { sharedPusherConfig } from '@herald/delivery';

/** The settings every pusher shares (batching, retries, ledger, fleet rate limit), plus the webhook ones. */
export const webhookPusherConfig = {
  ...commonConfig,
  ...sharedPusherConfig,
  WEBHOOK_TIMEOUT_MS: int('Whole-request timeout of one webhook POST (connect, send, answer, body), in ms; capped at 40% of LEDGER_LEASE_MS', { default: '5000', min: 100, max: 60000 }),
  WEBHOOK_MAX_PER_HOST: int('Most concurrent POSTs to one destination host:port', { default: '4', min: 1 }),
  WEBHOOK_MAX_QUEUED_PER_HOST: int('Most deliveries waiting for a slot of one host; more are deferred (back through a delay queue, no attempt spent)', {
    default: '400',
    min: 0,
  }),
  WEBHOOK_MAX_QUEUED_PER_SLOW_HOST: int('The same for a host whose last request timed out or could not connect, so a hanging host cannot hold the prefetch', {
    default: '8',
    min: 0,
  }),
  WEBHOOK_RESPONSE_BODY_LIMIT_BYTES: int("Most of a receiver's answer body read (for the failure reason); the rest is cut off", { default: '4096', min: 0, max: 1048576 }),
  WEBHOOK_DISABLE_AFTER_MS: int('A subscription whose deliveries keep failing (no success in between) for this long is disabled, with an alarm, when a delivery to it is given up (its last attempt failed, or refused for good)', {
    default: '86400000',
    min: 0,
    comparedOnly: true,
  }),
  WEBHOOK_ALLOW_HTTP_LOCALHOST: bool('Allow callbacks to reach the loopback (localhost, 127.0.0.0/8, ::1): development and tests; keep false in production', {
    default: 'false',
  }),
  WEBHOOK_SUBSCRIPTION_CACHE_TTL_MS: int('How long the pusher caches a subscription (URL, secret, enabled)', { default: '5000', min: 0 }),
} as const;
