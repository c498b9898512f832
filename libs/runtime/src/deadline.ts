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
