import { bool, int, strList } from './vars.ts';

/** The resource types subscriptions and change events may name (the HTTP API and the webhook-fanout read it). */
export const webhookResourceConfig = {
  WEBHOOK_RESOURCE_TYPES: strList('Resource types webhook subscriptions and change events may name, comma-separated', { default: 'campaign,ad' }),
  WEBHOOK_MAX_CHANGE_BYTES: int(
    'Largest change event, in bytes of JSON (old and new together), and largest diff a notification carries: a larger change is answered 413 by the API, refused by the client library, and parked payload-too-large by the webhook-fanout. Set it alike for the api and the webhook-fanout (and give the client library the same maxChangeBytes)',
    { default: '65536', min: 1024, max: 1_048_576 },
  ),
} as const;

/** Callback-URL rules for new subscriptions (HTTP API). */
export const webhookSubscriptionConfig = {
  ...webhookResourceConfig,
  WEBHOOK_ALLOW_HTTP_LOCALHOST: bool('Allow http:// callback URLs for localhost / 127.0.0.1 / [::1] (development and tests; keep false in production)', {
    default: 'false',
  }),
} as const;
