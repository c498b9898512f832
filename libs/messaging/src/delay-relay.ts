import { HeraldHeaders } from './headers.ts';
import { sleep } from './sleep.ts';
import type { InboundMessage, Outcome } from './types.ts';

/** Messages one process holds from one delay queue, each waiting for its due time. */
export const RELAY_PREFETCH = 256;

/** A message in a delay queue that says no queue to go back to (not published by Herald's settler). */
export const NO_RETURN_QUEUE = 'no-return-queue';

/**
 * The handler of a delay queue's relay: wait until each message's due time, then send it back to
 * the queue it came from ('forward': published with a confirm, then acked, so a relay that stops
 * or dies meanwhile leaves the message in the delay queue for another). A message without a due
 * time is due at once. The consumer's `stopping` signal cuts the wait short: the message is given back.
 */
export async function relayHandler(messages: readonly InboundMessage[], stopping: AbortSignal): Promise<Outcome[]> {
  return Promise.all(
    messages.map(async (m): Promise<Outcome> => {
      const returnTo = m.headers[HeraldHeaders.returnTo];
      if (typeof returnTo !== 'string' || returnTo === '') {
        return { kind: 'park', code: NO_RETURN_QUEUE, reason: `a message in ${m.queue} has no ${HeraldHeaders.returnTo} header naming the queue it goes back to` };
      }
      const due = Number(m.headers[HeraldHeaders.dueAt]);
      if (Number.isFinite(due)) await sleep(due - Date.now(), stopping);
      if (stopping.aborted) throw new RelayStopping();
      return { kind: 'forward', queue: returnTo };
    }),
  );
}

/** The relay stopped while the message waited: it stays in the delay queue (requeued, not an error). */
export class RelayStopping extends Error {
  override readonly name = 'RelayStopping';
  constructor() {
    super('the delay relay is stopping; the message stays in its delay queue');
  }
}
