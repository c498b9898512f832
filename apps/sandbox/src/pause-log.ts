import { PerformanceObserver, performance, type PerformanceEntry } from 'node:perf_hooks';

/**
 * A span in which the sandbox could not look at its sockets: requests that arrived then are
 * stamped when it got back, so receive times bunch there although nobody sent them bunched.
 */
export interface Pause {
  /** When it began, ms since the epoch. */
  fromMs: number;
  ms: number;
  /**
   * `gc`: a V8 collection on the main thread (its kind); `stall`: whatever held the event loop,
   * from the last tick that ran to the late one (the loop was held somewhere in that span).
   */
  kind: 'gc' | 'stall';
  detail?: string;
}

const TICK_MS = 10;
/** The clock's own jitter on a busy machine stays under this; longer is worth a line. */
export const PAUSE_THRESHOLD_MS = 20;

const GC_KINDS: Record<number, string> = { 1: 'scavenge', 2: 'mark-compact', 4: 'incremental', 8: 'weak-callbacks', 16: 'minor-mark-sweep' };

/**
 * Records the sandbox's own pauses of at least PAUSE_THRESHOLD_MS (a 10 ms timer that came late,
 * and main-thread garbage collections), the most recent `capacity`, for `GET /pauses`: the rate
 * tests hold receive times against them to tell a burst the pushers sent from one the instrument made.
 */
export class PauseLog {
  private readonly pauses: Pause[] = [];
  private readonly timer: NodeJS.Timeout;
  private readonly observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.duration < PAUSE_THRESHOLD_MS) continue;
      const flags = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0;
      this.add({ fromMs: performance.timeOrigin + entry.startTime, ms: entry.duration, kind: 'gc', detail: GC_KINDS[flags] ?? `kind ${flags}` });
    }
  });
  private last = Date.now();
  readonly sinceMs = this.last;

  /** When the latest tick ran (ms since the epoch): a stall that begins now will be dated from it. */
  get lastTickMs(): number {
    return this.last;
  }

  constructor(private readonly capacity = 1_000) {
    this.observer.observe({ entryTypes: ['gc'] });
    this.timer = setInterval(() => {
      const now = Date.now();
      const late = now - this.last - TICK_MS;
      // From the last tick, not from when the next one was due: the loop may have been held from
      // any moment after the last tick ran, and what arrived from then on was stamped late.
      if (late >= PAUSE_THRESHOLD_MS) this.add({ fromMs: this.last, ms: now - this.last, kind: 'stall' });
      this.last = now;
    }, TICK_MS).unref();
  }

  private add(pause: Pause): void {
    this.pauses.push(pause);
    if (this.pauses.length > this.capacity) this.pauses.shift();
  }

  list(): { sinceMs: number; thresholdMs: number; pauses: Pause[] } {
    return { sinceMs: this.sinceMs, thresholdMs: PAUSE_THRESHOLD_MS, pauses: [...this.pauses].sort((a, b) => a.fromMs - b.fromMs) };
  }

  close(): void {
    clearInterval(this.timer);
    this.observer.disconnect();
  }
}
