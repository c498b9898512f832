import type { Logger } from '@herald/logging';
import type { AlarmTransition } from '@herald/monitoring';
import type { MonitorMetrics } from './monitor-metrics.ts';
import { webhookPayload, type createWebhook } from './webhook.ts';

/**
 * Every alarm that fires or resolves goes to metrics (every monitor instance keeps its gauges), and
 * — from the one instance that holds the alarms lease, so a fleet of monitors calls once — to the
 * log and (when configured) to the webhook.
 */
export function alarmAnnouncer(deps: {
  vhost: string;
  logger: Logger;
  metrics: MonitorMetrics;
  webhook: ReturnType<typeof createWebhook> | undefined;
  /** True while this instance holds the alarms lease (always, for a monitor that runs alone). */
  announces: () => boolean;
}): (t: AlarmTransition) => void {
  return (t) => {
    deps.metrics.recordAlarm(t);
    if (!deps.announces()) return;
    const { alarm, queue, summary, value, threshold, since } = t.alarm;
    const fields = { alarm, queue, state: t.state, value, threshold, heldForMs: t.at - since };
    if (t.state === 'firing') deps.logger.warn(fields, `alarm firing: ${summary}`);
    else deps.logger.info(fields, `alarm resolved: ${alarm} on ${queue}`);
    deps.webhook?.post(webhookPayload(t, deps.vhost));
  };
}
