import type { Logger } from 'pino';

type Level = 'info' | 'warn' | 'error';

/** How long a summary counts the lines it holds back before it says how many there were. */
export const LOG_SUMMARY_INTERVAL_MS = 10_000;
/** Most kinds a summary tells apart in one interval; lines of more are counted together, unattributed. */
const MAX_KEYS = 1_000;

/** A log line said once per kind and interval (logSummary). */
export interface LogSummary {
  /**
   * Log `fields` at once if no line of this `kind` was logged in the current interval; otherwise
   * count it, and at the interval's end log the last such line once more with `repeated` (how many
   * were held back) and `overMs` (since the kind's first line).
   */
  note(kind: string, fields: Record<string, unknown>): void;
}

interface Held {
  last: Record<string, unknown>;
  repeated: number;
  firstAt: number;
}

const summaries = new WeakMap<Logger, Map<string, LogSummary>>();
/** Summaries holding counts not yet written: flushLogSummaries writes them (at exit). */
const holding = new Set<() => void>();

/**
 * A line an outage would write for every push or message (a park, a transport failure: thousands
 * a second, each with a stack) written once per kind (an app and a code, say) every
 * LOG_SUMMARY_INTERVAL_MS, and then once more with how many were held back: what went wrong, for
 * whom and how often, in a few lines. One summary per logger and message, however many callers.
 * Past MAX_KEYS kinds in an interval, further kinds are counted in one line that names none.
 */
export function logSummary(logger: Logger, level: Level, msg: string): LogSummary {
  let byMsg = summaries.get(logger);
  if (byMsg === undefined) summaries.set(logger, (byMsg = new Map()));
  const key = `${level}\u0000${msg}`;
  let summary = byMsg.get(key);
  if (summary === undefined) byMsg.set(key, (summary = createSummary(logger, level, msg)));
  return summary;
}

/** Write every count held back so far (a process about to exit: its last interval's counts). Never throws. */
export function flushLogSummaries(): void {
  for (const flush of [...holding]) {
    try {
      flush();
    } catch {
      // A process on its way out: what could not be written is lost, the exit goes on.
    }
  }
}

function createSummary(logger: Logger, level: Level, msg: string): LogSummary {
  let held = new Map<string, Held>();
  let overflow = { repeated: 0, firstAt: 0 };
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    // Taken and reset first: a write that throws leaves nothing to write twice.
    const [written, over] = [held, overflow];
    held = new Map();
    overflow = { repeated: 0, firstAt: 0 };
    clearTimeout(timer);
    timer = undefined;
    holding.delete(flush);
    const now = Date.now();
    for (const h of written.values()) if (h.repeated > 0) logger[level]({ ...h.last, repeated: h.repeated, overMs: now - h.firstAt }, msg);
    if (over.repeated > 0) logger[level]({ repeated: over.repeated, kinds: `more than ${MAX_KEYS}`, overMs: now - over.firstAt }, msg);
  };
  return {
    note(kind, fields) {
      const h = held.get(kind);
      if (h !== undefined) {
        h.last = fields;
        h.repeated += 1;
        return;
      }
      if (held.size >= MAX_KEYS) {
        if (overflow.repeated === 0) overflow.firstAt = Date.now();
        overflow.repeated += 1;
        return;
      }
      held.set(kind, { last: fields, repeated: 0, firstAt: Date.now() });
      logger[level](fields, msg);
      if (timer === undefined) {
        timer = setTimeout(flush, LOG_SUMMARY_INTERVAL_MS);
        timer.unref();
        holding.add(flush);
      }
    },
  };
}
