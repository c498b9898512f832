/** Pure retry and back-off arithmetic; no I/O. */

export const JITTER = 0.2;

export type RetryPlan =
  | { kind: 'delay'; queueDelayMs: number; expirationMs: number }
  | { kind: 'exhausted' };

/** Distinct positive delays, ascending: one delay queue each. */
export function distinctDelays(delaysMs: readonly number[]): number[] {
  return [...new Set(delaysMs.map((d) => Math.round(d)).filter((d) => d > 0))].sort((a, b) => a - b);
}

/**
 * Where attempt `attempt` (1-based) that asked for a retry goes.
 * Schedule delays get jitter within the 20% below the delay, because a per-message
 * expiration cannot exceed its queue's TTL. An explicit `requestedMs` (a provider's Retry-After,
 * the least delay a provider's documents ask) is a floor, not a replacement: the retry waits the
 * longer of it and the schedule's delay, so back-off still grows per attempt. A request longer than
 * the schedule's delay goes to the smallest delay queue that can hold it (clamped to the largest one).
 */
export function planRetry(
  attempt: number,
  delaysMs: readonly number[],
  requestedMs: number | undefined,
  random: () => number = Math.random,
): RetryPlan {
  const scheduled = delaysMs[attempt - 1];
  if (scheduled === undefined) return { kind: 'exhausted' };
  const queueDelayMs = Math.round(scheduled);
  const expirationMs = Math.max(1, Math.round(queueDelayMs * (1 - JITTER * random())));
  if (requestedMs === undefined || requestedMs <= expirationMs) return { kind: 'delay', queueDelayMs, expirationMs };
  if (requestedMs <= queueDelayMs) return { kind: 'delay', queueDelayMs, expirationMs: Math.round(requestedMs) };
  return clampIntoQueue(requestedMs, distinctDelays(delaysMs));
}

/** Where a deferred message waits: the delay queue nearest above delayMs; no attempt is spent. */
export function planDefer(delaysMs: readonly number[], requestedMs: number): RetryPlan {
  return clampIntoQueue(requestedMs, distinctDelays(delaysMs));
}

function clampIntoQueue(requestedMs: number, queues: readonly number[]): RetryPlan {
  const largest = queues[queues.length - 1];
  if (largest === undefined) return { kind: 'exhausted' };
  const wanted = Math.max(1, Math.round(requestedMs));
  const queueDelayMs = queues.find((q) => q >= wanted) ?? largest;
  return { kind: 'delay', queueDelayMs, expirationMs: Math.min(wanted, queueDelayMs) };
}

/** Consumer back-off while handle() keeps throwing: 0.5 s, 1 s, 2 s, … capped at 30 s. */
export function handlerBackoffMs(consecutiveErrors: number): number {
  if (consecutiveErrors <= 0) return 0;
  return Math.min(30_000, 500 * 2 ** (consecutiveErrors - 1));
}
