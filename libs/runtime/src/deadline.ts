import type { Logger } from '@herald/logging';

/** What `within` resolves to when its time ran out first. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * `pending`'s outcome, or TIMED_OUT once `ms` have passed first; the timer is cleared either way.
 * `pending` itself goes on: a later rejection of it is handled here, not left unhandled.
 */
export async function within<T>(pending: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), ms)));
  try {
    return await Promise.race([pending, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A shutdown's side work (a pruner, a poller, a descheduler) waited for until `deadline` (epoch ms)
 * at the latest, then left unfinished, said in the log: it can neither hold up the rest of the stop
 * (the consumer's) nor keep the stop past its bound. A failure is logged, not thrown: the stop goes on.
 */
export async function stopBy(deadline: number, what: string, stopping: Promise<unknown>, logger: Logger): Promise<void> {
  try {
    if ((await within(stopping, Math.max(0, deadline - Date.now()))) === TIMED_OUT) {
      logger.warn({ what }, `${what} did not stop within the shutdown bound: left unfinished`);
    }
  } catch (err) {
    logger.warn({ err, what }, `${what} failed to stop`);
  }
}
