import { HeraldHeaders } from './headers.ts';
import { sleep } from './sleep.ts';
import type { InboundMessage, Outcome } from './types.ts';

/** Messages one process holds from one delay queue, each waiting for its due time. */
export const RELAY_PREFETCH = 256;

/** A message in a delay queue that says no queue to go back to (not published by Herald's settler). */
export const NO_RETURN_QUEUE = 'no-return-queue';

/**
 * The longest a relay holds one message unacknowledged: a third of RabbitMQ's default
 * consumer_timeout (30 minutes), after which the broker closes a channel holding a delivery.
 */
export const RELAY_MAX_HOLD_MS = 10 * 60_000;

/**
 * The handler of a delay queue's relay: wait each message's time (waitOf), then send it back to
 * the queue it came from ('forward': published with a confirm, then acked, so a relay that stops
 * or dies meanwhile leaves the message in the delay queue for another). A message without a due
 * time is due at once; one due more than `maxHoldMs` from now is held that long, then published
 * as it is to the tail of its delay queue (still due when it was) and comes round again. The
 * consumer's `stopping` signal cuts the wait short: the message is given back.
 */
export function relayHandler(maxHoldMs = RELAY_MAX_HOLD_MS) {
  return (messages: readonly InboundMessage[], stopping: AbortSignal): Promise<Outcome[]> =>
    Promise.all(
      messages.map(async (m): Promise<Outcome> => {
        const returnTo = m.headers[HeraldHeaders.returnTo];
        if (typeof returnTo !== 'string' || returnTo === '') {
          return { kind: 'park', code: NO_RETURN_QUEUE, reason: `a message in ${m.queue} has no ${HeraldHeaders.returnTo} header naming the queue it goes back to` };
        }
        const wait = waitOf(m.headers);
        await sleep(Math.min(wait, maxHoldMs), stopping);
        if (stopping.aborted) throw new RelayStopping();
        return wait > maxHoldMs ? { kind: 'forward', queue: m.queue, asIs: true, waitMs: wait - maxHoldMs } : { kind: 'forward', queue: returnTo };
      }),
    );
}

/**
 * How long a message waits from now: until its dueAt by this clock, and no longer than its waitMs
 * (the whole wait it was given), since dueAt is another host's clock: a relay behind the writer held
 * each message that much longer. Not its waitMs counted from now: a message that waited in the delay
 * queue (a backlog of retries or deferrals after an outage) is due, and counting its whole wait again
 * drained the backlog at the relays' prefetch once a wait. A relay ahead of the writer still sends
 * early by as much: without a clock the two share, that cannot be told from a backlog.
 */
function waitOf(headers: Record<string, unknown>): number {
  const due = Number(headers[HeraldHeaders.dueAt]);
  const untilDue = Number.isFinite(due) ? due - Date.now() : 0;
  const waitMs = Number(headers[HeraldHeaders.waitMs]);
  return headers[HeraldHeaders.waitMs] !== undefined && Number.isFinite(waitMs) ? Math.min(untilDue, Math.max(0, waitMs)) : untilDue;
}

/** The relay stopped while the message waited: it stays in the delay queue (requeued, not an error). */
export class RelayStopping extends Error {
  override readonly name = 'RelayStopping';
  constructor() {
    super('the delay relay is stopping; the message stays in its delay queue');
  }
}
