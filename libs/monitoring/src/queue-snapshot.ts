/**
 * What kind of queue a name is: a work queue, its parked queue, a delay queue (retried and
 * deferred messages waiting, relayed back by the processes that use it), or a TTL retry queue of
 * an earlier release (herald.retry.*: dead-letters by itself, no consumer).
 */
export type QueueKind = 'work' | 'parked' | 'delay' | 'retry';

/** One queue as seen at one poll. Rates are per second, as the management API smooths them. */
export interface QueueSnapshot {
  name: string;
  kind: QueueKind;
  /** Ready + unacknowledged. */
  messages: number;
  ready: number;
  unacked: number;
  consumers: number;
  publishRate: number;
  ackRate: number;
  deliverRate: number;
  /** Age of the head message when the broker reports it (classic queues with timestamps), else undefined. */
  headAgeSeconds: number | undefined;
}

export const queueKindOf = (name: string): QueueKind =>
  name.endsWith('.parked') ? 'parked' : name.startsWith('herald.delay.') ? 'delay' : name.startsWith('herald.retry.') ? 'retry' : 'work';

/** Herald's queues are named push.* and herald.*; anything else in the vhost is not ours. */
export const isHeraldQueue = (name: string): boolean => name.startsWith('push.') || name.startsWith('herald.');

/** The management API's JSON for one queue (the fields Herald reads). */
export interface ManagementQueue {
  name: string;
  messages?: number;
  messages_ready?: number;
  messages_unacknowledged?: number;
  consumers?: number;
  head_message_timestamp?: number | null;
  message_stats?: {
    publish_details?: { rate: number };
    ack_details?: { rate: number };
    deliver_get_details?: { rate: number };
  };
}

export function toSnapshot(q: ManagementQueue, nowMs: number): QueueSnapshot {
  const ready = q.messages_ready ?? 0;
  const unacked = q.messages_unacknowledged ?? 0;
  const head = q.head_message_timestamp;
  return {
    name: q.name,
    kind: queueKindOf(q.name),
    messages: q.messages ?? ready + unacked,
    ready,
    unacked,
    consumers: q.consumers ?? 0,
    publishRate: q.message_stats?.publish_details?.rate ?? 0,
    ackRate: q.message_stats?.ack_details?.rate ?? 0,
    deliverRate: q.message_stats?.deliver_get_details?.rate ?? 0,
    headAgeSeconds: typeof head === 'number' && head > 0 ? Math.max(0, nowMs / 1000 - head) : undefined,
  };
}

/** Seconds to empty the queue at its current ack rate: Infinity when nothing is being acked. */
export const drainSecondsOf = (q: Pick<QueueSnapshot, 'messages' | 'ackRate'>): number =>
  q.messages === 0 ? 0 : q.ackRate > 0 ? q.messages / q.ackRate : Infinity;
