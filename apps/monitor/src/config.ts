import { bindAddress, commonConfig, int, pushPackConfig, url, urlList, type ConfigOf, type VarSpec } from '@herald/config';
import { parseThresholds, type ThresholdConfig } from '@herald/monitoring';

const thresholds: VarSpec<ThresholdConfig> = {
  description:
    'Per-queue alarm thresholds as JSON, e.g. {"push.apns.send":{"backlog":10000,"backlogForMs":60000,"drainSeconds":300}}; "*" sets defaults (fields: backlog, backlogForMs, noConsumerForMs, drainSeconds, drainForMs, drainMinMessages, stalledForMs, parkedWindowMs, oldestAgeSeconds, oldestAgeForMs)',
  default: '{}',
  parse: parseThresholds,
};

const webhookUrl: VarSpec<string | undefined> = {
  description:
    'Where alarms are POSTed as JSON ({"text", "alarm", "queue", "state": "firing" or "resolved", …}); a user and password in it go as Basic authorization; unset: log and metrics only',
  default: '',
  // A chat tool's incoming-webhook URL carries its token in the path: never shown.
  secret: true,
  parse: (raw) => (raw.length === 0 ? undefined : url(['http', 'https'], '').parse(raw)),
};

export const monitorConfig = {
  ...commonConfig,
  ...pushPackConfig,
  HTTP_PORT: int('Port for the dashboard, /api, /metrics, /healthz and /readyz (0 picks a free port)', { default: '9470', min: 0, max: 65535 }),
  HTTP_HOST: bindAddress('Address the dashboard, /api, /metrics, /healthz and /readyz listen on (the dashboard and /api need an operator key wherever it listens)'),
  RABBITMQ_API_URL: urlList(['http', 'https'], 'RabbitMQ management API, with credentials; in a cluster, a comma-separated list of each node’s API (a node that does not answer hands the call to the next)', { default: 'http://guest:guest@127.0.0.1:15672/api' }),
  MONITOR_POLL_MS: int('How often every queue is polled', { default: '5000', min: 100 }),
  MONITOR_THRESHOLDS: thresholds,
  MONITOR_WEBHOOK_URL: webhookUrl,
  MONITOR_HISTORY_MINUTES: int('How much queue-depth history the dashboard keeps in memory', { default: '60', min: 1, max: 1440 }),
  MONITOR_SCHEDULED_POLL_MS: int("How often scheduled-push counts by hour, the overdue ones, the apps' APNs certificate expiries and the provider lanes the pushers take to be down are read from PostgreSQL", { default: '30000', min: 100 }),
  MONITOR_APNS_CERTIFICATE_WARN_DAYS: int("The apns-certificate-expiring alarm fires this many days before an enabled app's APNs client certificate expires (read every MONITOR_SCHEDULED_POLL_MS)", { default: '30', min: 1, max: 365 }),
  MONITOR_PROVIDER_DOWN_GRACE_S: int('The provider-down alarm fires when a pusher has taken a provider lane to be down (its pushes held, unsent) for this long (read every MONITOR_SCHEDULED_POLL_MS)', { default: '60', min: 0 }),
  MONITOR_SCHEDULED_OVERDUE_S: int('The scheduled-overdue alarm fires when a stored scheduled push was due longer ago than this and no descheduler released it', { default: '300', min: 1 }),
} as const;

export type MonitorConfig = ConfigOf<typeof monitorConfig>;
