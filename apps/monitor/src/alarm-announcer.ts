import type { Logger } from '@herald/logging';
import type { Alarm, AlarmTransition } from '@herald/monitoring';
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
  /**
   * True while this instance holds the alarms lease (always, for a monitor that runs alone), and
   * while nobody can tell who holds it because the database does not answer: an alarm then, likely
   * about that very outage, is announced by every instance rather than by none.
   */
  announces: () => boolean;
}): (t: AlarmTransition, again?: 'again') => void {
  return (t, again) => {
    // Said again (a monitor taking the lease over): announced, not counted as raised a second time.
    if (again === undefined) deps.metrics.recordAlarm(t);
    if (!deps.announces()) return;
    const { alarm, queue, summary, value, threshold, since } = t.alarm;
    const fields = { alarm, queue, state: t.state, value, threshold, heldForMs: t.at - since };
    if (t.state === 'firing') deps.logger.warn(fields, `alarm firing: ${summary}`);
    else deps.logger.info(fields, `alarm resolved: ${alarm} on ${queue}`);
    deps.webhook?.post(webhookPayload(t, deps.vhost));
  };
}

/**
 * An instance that takes the alarms lease says again what is firing: the holder before it may have
 * died, or the lease may have been out of reach, with alarms fired meanwhile announced by nobody
 * (transitions are announced once, when they happen). A repeat is better than silence.
 */
export function reannounceFiring(active: readonly Alarm[], announce: (t: AlarmTransition, again: 'again') => void, now = Date.now()): void {
  for (const alarm of active) announce({ state: 'firing', alarm, at: now }, 'again');
}
