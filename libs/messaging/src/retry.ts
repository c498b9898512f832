/** Pure retry and back-off arithmetic; no I/O. */

export const JITTER = 0.2;

/**
 * A delay queue every retry schedule gets besides its own: the waits a provider or a receiver asks
 * beyond the schedule (APNs' 15 minutes after a 5xx, a Retry-After, a doubled quota minute) wait in
 * it, not in the schedule's largest queue, where each would have held a relay's slot for a hold of
 * ten minutes at a time while the everyday retries queued behind it. Longer asks are capped here,
 * spread up to a fifth above.
 */
export const LONGEST_DELAY_MS = 20 * 60_000;

export type RetryPlan =
  | { kind: 'delay'; queueDelayMs: number; expirationMs: number }
  | { kind: 'exhausted' };

/** Distinct positive delays, ascending. */
export function distinctDelays(delaysMs: readonly number[]): number[] {
  return [...new Set(delaysMs.map((d) => Math.round(d)).filter((d) => d > 0))].sort((a, b) => a - b);
}

/** The delay queues of a retry schedule, ascending: one per distinct delay, and LONGEST_DELAY_MS's (none without a schedule). */
export function delayQueuesOf(delaysMs: readonly number[]): number[] {
  const delays = distinctDelays(delaysMs);
  return delays.length === 0 ? [] : distinctDelays([...delays, LONGEST_DELAY_MS]);
}

/**
 * Where attempt `attempt` (1-based) that asked for a retry goes.
 * Schedule delays get jitter within the 20% below the delay, so a message is due within its
 * queue's delay. An explicit `requestedMs` (a provider's Retry-After, the least delay a provider's
 * documents ask) is a floor, not a replacement: the retry waits the longer of it and the schedule's
 * delay. A floor longer than the schedule's jittered delay is spread above it (spreadAbove): every
 * push that got one Retry-After would otherwise come back at one instant.
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
  return spreadAbove(requestedMs, delayQueuesOf(delaysMs), random);
}

/**
 * Where a deferred message waits (no attempt is spent): due after requestedMs, in the delay queue
 * nearest above. `spread`: requestedMs is the earliest it may come back and many messages are given
 * the same instant (a paused app's pushes, all due at the pause's end), so it is spread above it
 * (spreadAbove); otherwise it is due at requestedMs exactly (a turn booked for this message).
 */
export function planDefer(delaysMs: readonly number[], requestedMs: number, spread = false, random: () => number = Math.random): RetryPlan {
  const queues = delayQueuesOf(delaysMs);
  return spread ? spreadAbove(requestedMs, queues, random) : clampIntoQueue(requestedMs, queues);
}

/**
 * Due 0–20 % after the floor, never before it, placed as clampIntoQueue places it: in the smallest
 * delay queue whose delay holds that (a delay queue holds only messages due within its delay).
 * Past the largest queue (LONGEST_DELAY_MS's, or the schedule's if longer), in that queue, due 0–20 %
 * after its delay (or the draw, if less): a clamp to its delay would bring every draw back to one
 * instant, the herd this spreads. Its relay holds each until it is due.
 */
function spreadAbove(floorMs: number, queues: readonly number[], random: () => number): RetryPlan {
  const above = 1 + JITTER * random();
  const wanted = Math.round(Math.max(1, Math.round(floorMs)) * above);
  const largest = queues[queues.length - 1];
  if (largest !== undefined && wanted > largest) return { kind: 'delay', queueDelayMs: largest, expirationMs: Math.min(wanted, Math.round(largest * above)) };
  return clampIntoQueue(wanted, queues);
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
