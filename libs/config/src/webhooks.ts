import { bool, strList } from './vars.ts';

/** The resource types subscriptions and change events may name (the HTTP API and the webhook-fanout read it). */
export const webhookResourceConfig = {
  WEBHOOK_RESOURCE_TYPES: strList('Resource types webhook subscriptions and change events may name, comma-separated', { default: 'campaign,ad' }),
} as const;

/** Callback-URL rules for new subscriptions (HTTP API). */
export const webhookSubscriptionConfig = {
  ...webhookResourceConfig,
  WEBHOOK_ALLOW_HTTP_LOCALHOST: bool('Allow http:// callback URLs for localhost / 127.0.0.1 / [::1] (development and tests; keep false in production)', {
    default: 'false',
  }),
} as const;
