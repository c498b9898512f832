import { Counter, type Registry } from '@herald/runtime';

export interface FanoutMetrics {
  changes: Counter<'outcome'>;
  notifications: Counter<'resource_type'>;
}

export function createFanoutMetrics(registry: Registry): FanoutMetrics {
  return {
    changes: new Counter({
      name: 'herald_webhook_changes_total',
      help: 'Change events handled by the webhook-fanout, by outcome (fanned-out, no-subscribers, no-change, parked)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    notifications: new Counter({
      name: 'herald_webhook_notifications_queued_total',
      help: 'Webhook deliveries queued to push.webhook.send (one per change and matching subscription)',
      labelNames: ['resource_type'],
      registers: [registry],
    }),
  };
}
