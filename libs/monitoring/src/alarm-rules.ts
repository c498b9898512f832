import type { NodeResources } from './management-api.ts';
import { drainSecondsOf, type QueueSnapshot } from './queue-snapshot.ts';
import type { QueueThresholds, ThresholdConfig } from './thresholds.ts';

export const AlarmKinds = ['backlog', 'no-consumer', 'drain-time', 'stalled', 'parked-growing', 'queue-missing', 'rabbitmq-unreachable', 'scheduled-overdue', 'database-unreachable', 'apns-certificate-expiring', 'apns-certificate-expired', 'rabbitmq-resource-alarm', 'oldest-message', 'rabbitmq-node-down', 'rabbitmq-partition', 'provider-down'] as const;
export type AlarmKind = (typeof AlarmKinds)[number];

/** A condition that holds right now; it becomes an alarm once it has held for `forMs`. */
export interface AlarmCondition {
  alarm: AlarmKind;
  queue: string;
  forMs: number;
  value: number;
  threshold: number;
  /** One sentence for people (log, webhook, dashboard). */
  summary: string;
  /**
   * When the condition began, where its source says (epoch ms; a provider lane down since): its
   * `forMs` counts from then, not from the first poll that saw it.
   */
  since?: number;
}

export interface RuleInput {
  queues: readonly QueueSnapshot[];
  thresholds: ThresholdConfig;
  /** A parked queue's smallest depth within the last `windowMs`; undefined when there is no earlier sample. */
  parkedBaseline: (queue: string, windowMs: number) => number | undefined;
  /**
   * How many device pushes one message of this queue may carry: PUSH_PACK_SIZE for the send queues
   * (ADR 0016), else 1 (also when absent). The backlog alarm compares up to that many pushes a
   * message with its threshold, so packing makes it fire no later than for the same pushes unpacked.
   */
  pushesPerMessage?: (queue: string) => number;
  /**
   * The work queues Herald's topology declares: one absent from the broker is the queue-missing
   * alarm (deleted by hand, lost with a node), not the quiet end of its other alarms.
   */
  expected?: readonly string[];
  /**
   * The age of the queue's oldest message: the monitor's estimate (its README, "Oldest-message
   * age"), `lowerBound` while it has not seen the queue empty since it started. Absent, the
   * broker's head timestamp, which only classic queues report.
   */
  oldestAge?: (queue: string) => OldestAge | undefined;
}

export interface OldestAge {
  seconds: number;
  lowerBound: boolean;
}

const n = (v: number): string => Math.round(v).toLocaleString('en-US');
const secs = (v: number): string => (Number.isFinite(v) ? `${n(v)} s` : 'forever');

/**
 * Not a parked queue: nothing consumes one, so its depth never drains by itself and the alarm would
 * stand until someone replays or purges (parked-growing says when messages are parked; the
 * Prometheus backlog rules leave parked queues out too).
 */
function backlog(q: QueueSnapshot, t: QueueThresholds, pushesPerMessage: number): AlarmCondition | undefined {
  if (q.kind === 'parked') return undefined;
  const packed = pushesPerMessage > 1;
  const value = packed ? q.messages * pushesPerMessage : q.messages;
  if (value <= t.backlog) return undefined;
  const summary = packed
    ? `${q.name} holds ${n(q.messages)} messages, up to ${n(value)} pushes at ${pushesPerMessage} a message (threshold ${n(t.backlog)})`
    : `${q.name} holds ${n(q.messages)} messages (threshold ${n(t.backlog)})`;
  return { alarm: 'backlog', queue: q.name, forMs: t.backlogForMs, value, threshold: t.backlog, summary };
}

/** A work queue nobody consumes, or a delay queue nobody relays (its messages would never go back). */
function noConsumer(q: QueueSnapshot, t: QueueThresholds): AlarmCondition | undefined {
  if ((q.kind !== 'work' && q.kind !== 'delay') || q.consumers > 0 || q.messages === 0) return undefined;
  const summary = q.kind === 'delay' ? `${q.name} has ${n(q.messages)} messages waiting and no process relaying them back` : `${q.name} has ${n(q.messages)} messages waiting and no consumer`;
  return { alarm: 'no-consumer', queue: q.name, forMs: t.noConsumerForMs, value: q.messages, threshold: 0, summary };
}

/** Only with consumers: a queue nobody consumes is the no-consumer alarm's case. */
function drainTime(q: QueueSnapshot, t: QueueThresholds): AlarmCondition | undefined {
  if (q.kind !== 'work' || q.consumers === 0 || q.messages < Math.max(1, t.drainMinMessages)) return undefined;
  const drain = drainSecondsOf(q);
  if (drain <= t.drainSeconds) return undefined;
  const rate = q.ackRate > 0 ? `at ${q.ackRate.toFixed(1)} acks/s` : 'with nothing being acked';
  const summary = `${q.name} would take ${secs(drain)} to drain ${n(q.messages)} messages ${rate} (bound ${secs(t.drainSeconds)})`;
  return { alarm: 'drain-time', queue: q.name, forMs: t.drainForMs, value: Number.isFinite(drain) ? drain : -1, threshold: t.drainSeconds, summary };
}

/**
 * Consumers attached, messages waiting, nothing acked: the consumers are stuck (their database
 * gone, a handler that keeps failing and requeues), however few the messages. The drain-time
 * alarm sees this only above its minimum depth; users see it at once.
 */
function stalled(q: QueueSnapshot, t: QueueThresholds): AlarmCondition | undefined {
  if (q.kind !== 'work' || q.consumers === 0 || q.messages === 0 || q.ackRate > 0) return undefined;
  const summary = `${q.name} has ${n(q.messages)} messages and ${n(q.consumers)} consumers, and nothing is being acked`;
  return { alarm: 'stalled', queue: q.name, forMs: t.stalledForMs, value: q.messages, threshold: 0, summary };
}

/**
 * A work queue whose oldest message has waited longer than `oldestAgeSeconds`: the one alarm for a
 * queue that grows slowly while its consumers ack a little (a registrar acking 0.5/s with 1/s
 * arriving: below the backlog and drain-time minimums for half an hour, and stalled needs nothing
 * acked), while what it holds waits. Messages a consumer holds unacked count: a registrar's
 * prefetch (200) holds such a backlog whole. Only with consumers, as drain-time (none is the
 * no-consumer alarm's case); not a delay, retry or parked queue, which hold messages by design.
 */
function oldestMessage(q: QueueSnapshot, t: QueueThresholds, age: OldestAge | undefined): AlarmCondition | undefined {
  if (q.kind !== 'work' || q.consumers === 0 || q.messages === 0 || age === undefined || age.seconds <= t.oldestAgeSeconds) return undefined;
  const rate = q.ackRate > 0 ? `${q.ackRate.toFixed(1)} acks/s` : 'nothing being acked';
  const summary = `${q.name}'s oldest message has waited ${age.lowerBound ? 'at least ' : ''}${secs(age.seconds)} (bound ${secs(t.oldestAgeSeconds)}): ${n(q.messages)} messages, ${n(q.consumers)} consumers, ${rate}`;
  return { alarm: 'oldest-message', queue: q.name, forMs: t.oldestAgeForMs, value: Math.round(age.seconds), threshold: t.oldestAgeSeconds, summary };
}

function parkedGrowing(q: QueueSnapshot, t: QueueThresholds, baseline: number | undefined): AlarmCondition | undefined {
  if (q.kind !== 'parked' || baseline === undefined || q.messages <= baseline) return undefined;
  const summary = `${q.name} grew from ${n(baseline)} to ${n(q.messages)} parked messages within ${secs(t.parkedWindowMs / 1000)}`;
  return { alarm: 'parked-growing', queue: q.name, forMs: 0, value: q.messages - baseline, threshold: 0, summary };
}

/** A work queue the topology declares that the broker does not have: publishes to it fail, its consumers cannot subscribe. */
function missing(input: RuleInput): AlarmCondition[] {
  const present = new Set(input.queues.map((q) => q.name));
  return (input.expected ?? [])
    .filter((name) => !present.has(name))
    .map((name) => ({
      alarm: 'queue-missing' as const,
      queue: name,
      forMs: input.thresholds.for(name).noConsumerForMs,
      value: 0,
      threshold: 0,
      summary: `${name} does not exist on the broker: what is published to it fails and nothing consumes it (declare the topology again: npx tsx infra/rabbitmq/apply-topology.ts, or restart a service)`,
    }));
}

/** Every condition that holds at this poll, over every queue. */
export function activeConditions(input: RuleInput): AlarmCondition[] {
  return [...missing(input), ...input.queues.flatMap((q) => {
    const t = input.thresholds.for(q.name);
    const age = input.oldestAge !== undefined ? input.oldestAge(q.name) : q.headAgeSeconds === undefined ? undefined : { seconds: q.headAgeSeconds, lowerBound: false };
    const found = [
      backlog(q, t, input.pushesPerMessage?.(q.name) ?? 1),
      noConsumer(q, t),
      drainTime(q, t),
      stalled(q, t),
      oldestMessage(q, t, age),
      parkedGrowing(q, t, input.parkedBaseline(q.name, t.parkedWindowMs)),
    ];
    return found.filter((c): c is AlarmCondition => c !== undefined);
  })];
}

/** The monitor itself cannot see RabbitMQ: raised after `forMs` of failed polls. */
export const unreachableCondition = (forMs: number, error: string): AlarmCondition => ({
  alarm: 'rabbitmq-unreachable',
  queue: '*',
  forMs,
  value: 1,
  threshold: 0,
  summary: `the monitor cannot read the RabbitMQ management API: ${error}`,
});

/** The monitor cannot read PostgreSQL (the stored scheduled pushes, the apps' APNs certificates, the provider lanes down): raised after `forMs` of failed reads. */
export const databaseUnreachableCondition = (forMs: number, error: string): AlarmCondition => ({
  alarm: 'database-unreachable',
  queue: '*',
  forMs,
  value: 1,
  threshold: 0,
  summary: `the monitor cannot read the scheduled pushes, the apps' APNs certificates and the provider lanes down from PostgreSQL (scheduled-overdue, the certificate alarms and provider-down are blind meanwhile): ${error}`,
});

const mb = (bytes: number | undefined): string => (bytes === undefined ? '?' : `${n(bytes / 1_048_576)} MB`);

/**
 * RabbitMQ's own memory or disk alarm on a node (`node.<name>`, one condition a node): it blocks
 * every connection that publishes, cluster-wide, so the backlog and stalled alarms it causes show
 * without their cause. Said at once (the broker raised it after its own watermark); `value` is the
 * share of the memory limit used, or with only a disk alarm the free disk, `threshold` its limit.
 */
export function resourceAlarmConditions(nodes: readonly NodeResources[]): AlarmCondition[] {
  const blocks = 'RabbitMQ blocks every publisher in the cluster meanwhile: new jobs are answered 503, what the services hand on waits (nothing is lost)';
  return nodes
    .filter((node) => node.memAlarm || node.diskFreeAlarm)
    .map((node) => {
      const said: string[] = [];
      if (node.memAlarm) {
        said.push(`RabbitMQ node ${node.name} is in a memory alarm (${mb(node.memUsed)} used of its ${mb(node.memLimit)} watermark): ${blocks}; drain the send queues (are the pushers running?) or give it memory`);
      }
      if (node.diskFreeAlarm) said.push(`RabbitMQ node ${node.name} is in a disk alarm (${mb(node.diskFree)} free, its limit ${mb(node.diskFreeLimit)}): ${blocks}; free disk on the node`);
      const used = node.memUsed !== undefined && node.memLimit !== undefined && node.memLimit > 0 ? node.memUsed / node.memLimit : 1;
      const [value, threshold] = node.memAlarm ? [Math.round(used * 100) / 100, 1] : [node.diskFree ?? 0, node.diskFreeLimit ?? 0];
      return { alarm: 'rabbitmq-resource-alarm' as const, queue: `node.${node.name}`, forMs: 0, value, threshold, summary: said.join(' / ') };
    });
}

/**
 * The cluster's membership as the node that answered sees it (`node.<name>`, a condition a node):
 * rabbitmq-node-down for a member that is not running (stopped, crashed, or cut off from the node
 * asked), after `downForMs` (a quick restart passes): no queue alarm shows it while the quorum
 * queues keep a majority, and the next node lost can take that. rabbitmq-partition at once for a
 * node that reports a network partition: the sides no longer agree, and RabbitMQ mends it only by
 * its partition handling mode (ignore, the default: by hand).
 */
export function nodeConditions(nodes: readonly NodeResources[], downForMs: number): AlarmCondition[] {
  const down = nodes
    .filter((node) => !node.running)
    .map((node) => ({
      alarm: 'rabbitmq-node-down' as const,
      queue: `node.${node.name}`,
      forMs: downForMs,
      value: 1,
      threshold: 0,
      summary: `RabbitMQ node ${node.name} is a member of the cluster and not running: each quorum queue with a replica there has one fewer (it keeps working while most of its replicas run), and services connected to it reconnect to the other nodes of their AMQP_URL; start it (or, gone for good, rabbitmqctl forget_cluster_node ${node.name})`,
    }));
  const partitioned = nodes
    .filter((node) => node.partitions.length > 0)
    .map((node) => ({
      alarm: 'rabbitmq-partition' as const,
      queue: `node.${node.name}`,
      forMs: 0,
      value: node.partitions.length,
      threshold: 0,
      summary: `RabbitMQ node ${node.name} reports a network partition from ${node.partitions.join(', ')}: the sides no longer agree on the cluster (a quorum queue's minority side takes nothing); once the network is mended, pause_minority and autoheal recover by themselves, the default (ignore) needs the nodes of one side restarted`,
    }));
  return [...down, ...partitioned];
}
