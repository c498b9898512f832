import { Counter, type Registry } from '@herald/runtime';

export interface WebhookMetrics {
  responses: Counter<'class'>;
  disabled: Counter;
  hostBusy: Counter;
}

/** Webhook-only metrics; deliveries are counted in herald_pushes_total{platform="webhook"} like every push. */
export function createWebhookMetrics(registry: Registry): WebhookMetrics {
  return {
    responses: new Counter({
      name: 'herald_webhook_responses_total',
      help: "Receivers' answers by class: 2xx, 3xx, 4xx, 5xx, timeout, connection",
      labelNames: ['class'],
      registers: [registry],
    }),
    disabled: new Counter({
      name: 'herald_webhook_subscriptions_disabled_total',
      help: 'Subscriptions disabled because their endpoint kept failing for WEBHOOK_DISABLE_AFTER_MS (an alarm)',
      registers: [registry],
    }),
    hostBusy: new Counter({
      name: 'herald_webhook_host_busy_total',
      help: 'Deliveries deferred because their destination host already had WEBHOOK_MAX_PER_HOST requests running and a full queue',
      registers: [registry],
    }),
  };
}
