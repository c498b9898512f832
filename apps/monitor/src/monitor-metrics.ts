import { Platforms } from '@herald/contracts';
import type { AlarmTransition, QueueSnapshot } from '@herald/monitoring';
import { Counter, Gauge, type Registry } from '@herald/runtime';

export interface MonitorMetrics {
  /** `pushesPerMessage`: device pushes a message of the queue may carry (PUSH_PACK_SIZE on the send queues, ADR 0016). */
  recordQueues(queues: ReadonlyArray<QueueSnapshot & { oldestAgeSeconds: number }>, pushesPerMessage?: (queue: string) => number): void;
  recordAlarm(t: AlarmTransition): void;
  recordScheduled(byPlatform: ReadonlyMap<string, number>): void;
  /** The oldest overdue scheduled push's age per platform (0 when none is). */
  recordOverdue(overdue: ReadonlyArray<{ platform: string; earliestDueAt: Date }>, now: number): void;
  /** When each enabled app's APNs client certificate expires. */
  recordCertificates(certificates: ReadonlyArray<{ app: string; expiresAt: Date }>): void;
  /**
   * A poll of the management API ended: counted by outcome, and the monitor is blind
   * (herald_monitor_blind 1) from a failed one until one succeeds. Call it once the poll's queue and
   * alarm gauges are set: a scrape must not take the last view for current before they are.
   */
  recordPoll(outcome: 'ok' | 'failed'): void;
  webhookFailures: Counter;
  /** 1 while this monitor holds the alarms lease (announces alarms to the log and webhook). */
  leaseHeld: Gauge;
}

type QueueLabels = 'queue' | 'kind';

export function createMonitorMetrics(registry: Registry): MonitorMetrics {
  const registers = [registry];
  const polls = new Counter({ name: 'herald_monitor_polls_total', help: 'Polls of the management API, by outcome (ok, failed)', labelNames: ['outcome'], registers });
  // Both outcomes from the start, at 0: a monitor that never finishes a poll has an ok series that
  // never moves, which HeraldMonitorNotPolling sees (no series at all it would not).
  for (const outcome of ['ok', 'failed']) polls.inc({ outcome }, 0);
  // 1 from the start: before its first good poll a monitor has no view (the rules then go by the
  // other replicas', and by its own only while none of them sees either).
  const blind = new Gauge({
    name: 'herald_monitor_blind',
    help: "1 while this monitor's latest poll of the management API failed (or none has succeeded yet): its herald_queue_* and herald_alarm_active series hold its last view, not the present; 0 once a poll succeeds",
    registers,
  });
  blind.set(1);
  const queueGauge = (name: string, help: string) => new Gauge<QueueLabels>({ name, help, labelNames: ['queue', 'kind'], registers });
  type Read = (q: QueueSnapshot & { oldestAgeSeconds: number }, pushesPerMessage: number) => number;
  const gauges: Array<[Gauge<QueueLabels>, Read]> = [
    [queueGauge('herald_queue_messages', 'Messages in the queue (ready + unacknowledged)'), (q) => q.messages],
    [queueGauge('herald_queue_messages_ready', 'Messages waiting for a consumer'), (q) => q.ready],
    [queueGauge('herald_queue_messages_unacked', 'Messages delivered and not yet acknowledged'), (q) => q.unacked],
    [queueGauge('herald_queue_consumers', 'Consumers attached to the queue'), (q) => q.consumers],
    [queueGauge('herald_queue_publish_rate', 'Messages published into the queue per second (broker-smoothed)'), (q) => q.publishRate],
    [queueGauge('herald_queue_ack_rate', 'Messages acknowledged per second (broker-smoothed)'), (q) => q.ackRate],
    [queueGauge('herald_queue_oldest_age_seconds', 'Age of the oldest message, or an estimate of it (a lower bound while the monitor has not seen the queue empty since it started: its README)'), (q) => q.oldestAgeSeconds],
    [
      queueGauge('herald_queue_backlog', 'What the backlog alarm counts: the messages, and on a send queue up to PUSH_PACK_SIZE device pushes a message (ADR 0016)'),
      (q, pushesPerMessage) => q.messages * pushesPerMessage,
    ],
  ];
  const active = new Gauge<'alarm' | 'queue'>({ name: 'herald_alarm_active', help: '1 while the alarm fires', labelNames: ['alarm', 'queue'], registers });
  const raised = new Counter<'alarm' | 'queue'>({ name: 'herald_alarms_raised_total', help: 'Alarms raised', labelNames: ['alarm', 'queue'], registers });
  const scheduled = new Gauge<'platform'>({ name: 'herald_scheduled_pushes', help: 'Scheduled pushes due within the next 24 hours (overdue included)', labelNames: ['platform'], registers });
  const overdueAge = new Gauge<'platform'>({
    name: 'herald_scheduled_overdue_seconds',
    help: 'How long ago the earliest stored scheduled push still waiting was due (past the scheduled-overdue grace; 0: none), per platform',
    labelNames: ['platform'],
    registers,
  });
  const certificateExpiry = new Gauge<'app'>({
    name: 'herald_apns_certificate_expiry_timestamp_seconds',
    help: "When an enabled app's APNs client certificate stops being valid (Unix seconds); apps with a .p8 signing key have none",
    labelNames: ['app'],
    registers,
  });
  return {
    recordQueues(queues, pushesPerMessage = () => 1) {
      for (const [gauge, read] of gauges) {
        gauge.reset();
        for (const q of queues) gauge.set({ queue: q.name, kind: q.kind }, read(q, pushesPerMessage(q.name)));
      }
    },
    recordAlarm(t) {
      const labels = { alarm: t.alarm.alarm, queue: t.alarm.queue };
      active.set(labels, t.state === 'firing' ? 1 : 0);
      if (t.state === 'firing') raised.inc(labels);
    },
    recordScheduled(byPlatform) {
      scheduled.reset();
      for (const [platform, count] of byPlatform) scheduled.set({ platform }, count);
    },
    recordOverdue(overdue, now) {
      for (const platform of Platforms) overdueAge.set({ platform }, 0);
      for (const o of overdue) overdueAge.set({ platform: o.platform }, Math.max(0, (now - o.earliestDueAt.getTime()) / 1000));
    },
    recordCertificates(certificates) {
      certificateExpiry.reset();
      for (const c of certificates) certificateExpiry.set({ app: c.app }, c.expiresAt.getTime() / 1000);
    },
    recordPoll(outcome) {
      polls.inc({ outcome });
      blind.set(outcome === 'ok' ? 0 : 1);
    },
    webhookFailures: new Counter({ name: 'herald_alarm_webhook_failures_total', help: 'Alarm webhook posts that failed after every attempt', registers }),
    leaseHeld: new Gauge({ name: 'herald_monitor_alarms_lease_held', help: '1 while this monitor instance holds the alarms lease and announces alarms (log, webhook)', registers }),
  };
}
