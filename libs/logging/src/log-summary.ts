import type { Logger } from 'pino';

type Level = 'info' | 'warn' | 'error';

/** How long a summary counts the lines it holds back before it says how many there were. */
export const LOG_SUMMARY_INTERVAL_MS = 10_000;
/** Most kinds a summary tells apart in one interval; more are counted under one key. */
const MAX_KEYS = 1_000;
const OTHER = '(other)';

/** A log line said once per kind and interval (logSummary). */
export interface LogSummary {
  /**
   * Log `fields` at once if no line of this `kind` was logged in the current interval; otherwise
   * count it, and at the interval's end log the last such line once more with `repeated` (how many
   * were held back) and `overMs`.
   */
  note(kind: string, fields: Record<string, unknown>): void;
}

interface Held {
  last: Record<string, unknown>;
  repeated: number;
}

const summaries = new WeakMap<Logger, Map<string, LogSummary>>();

/**
 * A line an outage would write for every push or message (a park, a retry, a transport failure:
 * thousands a second, each with a stack) written once per kind (an app and a code, say) every
 * LOG_SUMMARY_INTERVAL_MS, and then once more with how many were held back: what went wrong, for
 * whom and how often, in a few lines. One summary per logger and message, however many callers.
 */
export function logSummary(logger: Logger, level: Level, msg: string): LogSummary {
  let byMsg = summaries.get(logger);
  if (byMsg === undefined) summaries.set(logger, (byMsg = new Map()));
  const key = `${level}\u0000${msg}`;
  let summary = byMsg.get(key);
  if (summary === undefined) byMsg.set(key, (summary = createSummary(logger, level, msg)));
  return summary;
}

function createSummary(logger: Logger, level: Level, msg: string): LogSummary {
  const held = new Map<string, Held>();
  let timer: NodeJS.Timeout | undefined;
  const tick = (): void => {
    for (const h of held.values()) if (h.repeated > 0) logger[level]({ ...h.last, repeated: h.repeated, overMs: LOG_SUMMARY_INTERVAL_MS }, msg);
    held.clear();
    timer = undefined;
  };
  return {
    note(kind, fields) {
      const k = held.has(kind) || held.size < MAX_KEYS ? kind : OTHER;
      const h = held.get(k);
      if (h !== undefined) {
        h.last = fields;
        h.repeated += 1;
        return;
      }
      held.set(k, { last: fields, repeated: 0 });
      logger[level](fields, msg);
      if (timer === undefined) {
        timer = setTimeout(tick, LOG_SUMMARY_INTERVAL_MS);
        timer.unref();
      }
    },
  };
}
