import { z } from 'zod';

/** When each alarm fires for one queue. Durations in ms; a condition must hold that long. */
export interface QueueThresholds {
  /** Backlog alarm: more than this many messages … */
  backlog: number;
  /** … for longer than this. */
  backlogForMs: number;
  /** Dead-consumer alarm: messages waiting and no consumer for longer than this. */
  noConsumerForMs: number;
  /** Drain alarm: time to empty at the current ack rate above this … */
  drainSeconds: number;
  /** … for longer than this … */
  drainForMs: number;
  /** … and only with at least this many messages (a handful of messages is not a drain problem). */
  drainMinMessages: number;
  /** Parked alarm: the parked queue grew within this window. */
  parkedWindowMs: number;
  /** Stalled alarm: a work queue with messages and consumers that acks nothing for longer than this. */
  stalledForMs: number;
  /** Oldest-message alarm: a work queue's oldest message (ready or held unacked) older than this … */
  oldestAgeSeconds: number;
  /** … for longer than this. */
  oldestAgeForMs: number;
}

export const DEFAULT_THRESHOLDS: Readonly<QueueThresholds> = Object.freeze({
  backlog: 10_000,
  backlogForMs: 60_000,
  noConsumerForMs: 30_000,
  drainSeconds: 600,
  drainForMs: 60_000,
  drainMinMessages: 1_000,
  parkedWindowMs: 300_000,
  stalledForMs: 120_000,
  oldestAgeSeconds: 300,
  oldestAgeForMs: 60_000,
});

const partial = z.strictObject({
  backlog: z.number().int().min(0),
  backlogForMs: z.number().int().min(0),
  noConsumerForMs: z.number().int().min(0),
  drainSeconds: z.number().min(0),
  drainForMs: z.number().int().min(0),
  drainMinMessages: z.number().int().min(0),
  parkedWindowMs: z.number().int().min(1),
  stalledForMs: z.number().int().min(0),
  oldestAgeSeconds: z.number().min(0),
  oldestAgeForMs: z.number().int().min(0),
}).partial();

/** `{"*": {...defaults}, "push.apns.send": {...}}`; a parked queue uses its own entry, else its work queue's. */
const schema = z.record(z.string().min(1), partial);

export interface ThresholdConfig {
  /** Thresholds for one queue: defaults, overridden by "*", overridden by the queue's own entry. */
  for(queue: string): QueueThresholds;
  readonly raw: Readonly<Record<string, Partial<QueueThresholds>>>;
}

export function thresholdConfig(raw: Record<string, Partial<QueueThresholds>> = {}): ThresholdConfig {
  const frozen = Object.freeze({ ...raw });
  return {
    raw: frozen,
    for(queue) {
      const own = frozen[queue] ?? frozen[queue.replace(/\.parked$/, '')] ?? {};
      return { ...DEFAULT_THRESHOLDS, ...frozen['*'], ...own };
    },
  };
}

/** Parse MONITOR_THRESHOLDS; throws with every problem named (for the config loader). */
export function parseThresholds(json: string): ThresholdConfig {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    throw new Error(`must be JSON, like {"push.apns.send":{"backlog":10000}}: ${(err as Error).message}`, { cause: err });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new Error(parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
  }
  return thresholdConfig(parsed.data as Record<string, Partial<QueueThresholds>>);
}

/**
 * How long a monitor must have watched before a queue's oldest-message alarm can fire: without the
 * broker's head timestamp (quorum queues) a restarted monitor counts a queue's oldest message from
 * its own first poll, so the alarm waits its age bound and then its delay.
 */
export const oldestAgeWindowMs = (t: Pick<QueueThresholds, 'oldestAgeSeconds' | 'oldestAgeForMs'>): number => t.oldestAgeSeconds * 1000 + t.oldestAgeForMs;

/**
 * The longest any queue's alarm waits for its condition (defaults, "*" and every queue's entry):
 * until a monitor has watched that long, a condition that held before it started may still become
 * an alarm, so no alarm firing does not yet mean all clear.
 */
export function longestDelayMs(config: ThresholdConfig): number {
  return Math.max(
    ...['*', ...Object.keys(config.raw)].map((queue) => {
      const t = config.for(queue);
      // parkedWindowMs: parked-growing compares the parked depth with its depth that long ago, which a restarted monitor has only seen after it.
      return Math.max(t.backlogForMs, t.noConsumerForMs, t.drainForMs, t.stalledForMs, t.parkedWindowMs, oldestAgeWindowMs(t));
    }),
  );
}
