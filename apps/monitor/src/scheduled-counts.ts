import type { Database } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { MonitorMetrics } from './monitor-metrics.ts';

/** Scheduled pushes waiting per upcoming hour (UTC), per platform; overdue ones count in the first hour. */
export interface ScheduledHour {
  hour: string;
  byPlatform: Record<string, number>;
  total: number;
}

export interface ScheduledCounts {
  at: string | null;
  hours: ScheduledHour[];
}

const HOURS_AHEAD = 24;

function byHour(rows: ReadonlyArray<{ platform: string; hour: Date; count: number }>): ScheduledHour[] {
  const hours = new Map<string, ScheduledHour>();
  for (const r of rows) {
    const key = r.hour.toISOString();
    const h = hours.get(key) ?? { hour: key, byPlatform: {}, total: 0 };
    h.byPlatform[r.platform] = (h.byPlatform[r.platform] ?? 0) + r.count;
    h.total += r.count;
    hours.set(key, h);
  }
  return [...hours.values()].sort((a, b) => a.hour.localeCompare(b.hour));
}

/** Reads `countsByHour` every `pollMs`; a failed read keeps the last counts and is logged. */
export function startScheduledCounts(deps: { db: Database; pollMs: number; metrics: MonitorMetrics; logger: Logger }) {
  let current: ScheduledCounts = { at: null, hours: [] };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const read = async (): Promise<void> => {
    try {
      const rows = await deps.db.scheduled.countsByHour(undefined, HOURS_AHEAD);
      current = { at: new Date().toISOString(), hours: byHour(rows) };
      const totals = new Map<string, number>();
      for (const r of rows) totals.set(r.platform, (totals.get(r.platform) ?? 0) + r.count);
      deps.metrics.recordScheduled(totals);
    } catch (err) {
      deps.logger.warn({ error: (err as Error).message }, 'reading scheduled counts failed');
    }
  };
  const loop = (): void => {
    running = read().finally(() => {
      if (!stopped) timer = setTimeout(loop, deps.pollMs);
    });
  };
  loop();
  return {
    current: (): ScheduledCounts => current,
    stop: async (): Promise<void> => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
