import type { Logger } from '@herald/logging';
import type { AlarmTransition } from '@herald/monitoring';
import type { MonitorMetrics } from './monitor-metrics.ts';
import { webhookPayload, type createWebhook } from './webhook.ts';

/** Every alarm that fires or resolves goes to the log, to metrics and (when configured) to the webhook. */
export function alarmAnnouncer(deps: {
  vhost: string;
  logger: Logger;
  metrics: MonitorMetrics;
  webhook: ReturnType<typeof createWebhook> | undefined;
}): (t: AlarmTransition) => void {
  return (t) => {
    const { alarm, queue, summary, value, threshold, since } = t.alarm;
    const fields = { alarm, queue, state: t.state, value, threshold, heldForMs: t.at - since };
    if (t.state === 'firing') deps.logger.warn(fields, `alarm firing: ${summary}`);
    else deps.logger.info(fields, `alarm resolved: ${alarm} on ${queue}`);
    deps.metrics.recordAlarm(t);
    deps.webhook?.post(webhookPayload(t, deps.vhost));
  };
}
