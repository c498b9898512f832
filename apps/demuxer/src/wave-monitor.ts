import type { Platform } from '@herald/contracts';

export interface WaveAlert {
  platform: Platform;
  windowStart: Date;
  count: number;
  capacity: number;
}

/** How far ahead the monitor counts (WaveMonitor's horizonMs): a week. */
export const DEFAULT_WAVE_HORIZON_MS = 7 * 86_400_000;

/**
 * Counts pushes this process scheduled per (platform, time window) and reports a window once,
 * when its count first exceeds what the outbound rate can send within it (rate × window).
 * Counts are per process (a lower bound when several demuxers run); windows in the past are
 * forgotten, once a window. Only windows within `horizonMs` of now are counted: counted out to the
 * scheduling horizon (a year), an app spreading reminders over every minute of it kept 1.6 million
 * windows in memory and walked them all for every scheduled job. A wave further ahead is never
 * warned of.
 */
export class WaveMonitor {
  private readonly counts = new Map<string, number>();
  private readonly capacity: number;
  private sweptAt = -Infinity;

  constructor(
    private readonly ratePerS: number,
    private readonly windowS: number,
    private readonly horizonMs = DEFAULT_WAVE_HORIZON_MS,
  ) {
    this.capacity = ratePerS * windowS;
  }

  /** How many windows are counted now. */
  get windows(): number {
    return this.counts.size;
  }

  /** Add scheduled pushes; returns the windows that just went over capacity. */
  add(pushes: ReadonlyArray<{ platform: Platform; dueAt: Date }>, now: Date): WaveAlert[] {
    const windowMs = this.windowS * 1000;
    const beyond = now.getTime() + this.horizonMs;
    const alerts: WaveAlert[] = [];
    for (const p of pushes) {
      if (p.dueAt.getTime() > beyond) continue;
      const start = Math.floor(p.dueAt.getTime() / windowMs) * windowMs;
      const key = `${p.platform}:${start}`;
      const count = (this.counts.get(key) ?? 0) + 1;
      this.counts.set(key, count);
      if (count === this.capacity + 1) alerts.push({ platform: p.platform, windowStart: new Date(start), count, capacity: this.capacity });
    }
    if (now.getTime() - this.sweptAt >= windowMs) {
      this.sweptAt = now.getTime();
      this.forgetBefore(now.getTime() - windowMs);
    }
    return alerts.map((a) => ({ ...a, count: this.counts.get(`${a.platform}:${a.windowStart.getTime()}`) ?? a.count }));
  }

  private forgetBefore(ms: number): void {
    for (const key of this.counts.keys()) {
      if (Number(key.slice(key.indexOf(':') + 1)) < ms) this.counts.delete(key);
    }
  }
}
