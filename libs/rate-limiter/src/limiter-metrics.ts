import { Counter, Gauge, Histogram, type Registry } from '@herald/runtime';

export interface LimiterMetrics {
  budget: Gauge<'platform' | 'app'>;
  spent: Counter<'platform'>;
  waitSeconds: Histogram<'platform'>;
  backoffFactor: Gauge<'platform'>;
  pauses: Counter<'platform' | 'app' | 'source'>;
  /** By app (its id; for Web Push, not its push service): HeraldAppPushesHeldBack reads them beside its deliveries. */
  held: Counter<'platform' | 'app'>;
  overBudget: Counter<'platform' | 'app'>;
  appSlowed: Counter<'platform' | 'app'>;
}

export function createLimiterMetrics(registry: Registry): LimiterMetrics {
  const registers = [registry];
  return {
    budget: new Gauge({
      name: 'herald_rate_limit_budget',
      help: 'Configured fleet-wide budget in pushes/s (app="*": the whole platform); absent: no limit',
      labelNames: ['platform', 'app'],
      registers,
    }),
    spent: new Counter({ name: 'herald_rate_limit_spent_total', help: 'Pushes let through by the rate limiter', labelNames: ['platform'], registers }),
    waitSeconds: new Histogram({
      name: 'herald_rate_limit_wait_seconds',
      help: 'How long a push waited for budget (only pushes that had to wait)',
      labelNames: ['platform'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    backoffFactor: new Gauge({
      name: 'herald_rate_limit_backoff_factor',
      help: 'This process\'s provider back-pressure factor (1: not slowed down; 0.5: halved after a throttle)',
      labelNames: ['platform'],
      registers,
    }),
    pauses: new Counter({
      name: 'herald_rate_limit_app_pauses_total',
      help: 'Apps held back for a provider Retry-After: source="provider" (this process got the answer) or "fleet" (another pusher did; read from the store)',
      labelNames: ['platform', 'app', 'source'],
      registers,
    }),
    held: new Counter({
      name: 'herald_rate_limit_held_total',
      help: 'Pushes not let through because their app is paused for a provider Retry-After (the pusher defers them, spending no attempt)',
      labelNames: ['platform', 'app'],
      registers,
    }),
    overBudget: new Counter({
      name: 'herald_rate_limit_app_over_budget_total',
      help: "Pushes not let through because more of their app's pushes wait for the app's own budget than it serves in 250 ms (the pusher defers them to their turn, spending no attempt)",
      labelNames: ['platform', 'app'],
      registers,
    }),
    appSlowed: new Counter({
      name: 'herald_rate_limit_app_slowed_total',
      help: 'Pushes not let through because more of their app\'s pushes wait than the rate a provider throttle (FCM QUOTA_EXCEEDED) slowed it to serves in 250 ms (the pusher defers them to their turn, spending no attempt)',
      labelNames: ['platform', 'app'],
      registers,
    }),
  };
}
