import { abortRegistry } from '@herald/rate-limiter';

/** A batch's wait for budget or a slot: aborted at its deadline or at shutdown; `close` when the batch is done. */
export interface WaitWindow {
  signal: AbortSignal;
  /**
   * Clears the timer, lets go of the shutdown signal and ends any wait still on the window: a
   * batch that failed half-way leaves none waiting without its deadline or the shutdown.
   */
  close(): void;
}

/**
 * An AbortSignal aborted at `deadlineMs` (epoch ms) or when `stop` is. Not AbortSignal.any over the
 * process-long `stop`: on Node 20 each call leaves an entry in that signal's dependants for good
 * (about 70 bytes a batch, never reclaimed: tens of MB a day in a busy pusher). Nor a listener of
 * its own on `stop`: through the shared registry, one listener serves every batch in flight (more
 * than ten would draw Node's MaxListenersExceededWarning).
 */
export function waitWindow(deadlineMs: number, stop?: AbortSignal): WaitWindow {
  const window = new AbortController();
  const abort = (): void => window.abort();
  const timer = setTimeout(abort, Math.max(1, deadlineMs - Date.now()));
  let release = (): void => undefined;
  if (stop?.aborted === true) abort();
  else if (stop !== undefined) release = abortRegistry.on(stop, abort);
  return {
    signal: window.signal,
    close: () => {
      clearTimeout(timer);
      release();
      abort();
    },
  };
}
