import type { Platform } from '@herald/contracts';

export interface WaveAlert {
  platform: Platform;
  windowStart: Date;
  count: number;
  capacity: number;
}

/**
 * Counts pushes this process scheduled per (platform, time window) and reports a window once,
 * when its count first exceeds what the outbound rate can send within it (rate × window).
 * Counts are per process (a lower bound when several demuxers run); windows in the past are
 * forgotten.
 */
export class WaveMonitor {
  private readonly counts = new Map<string, number>();
  private readonly capacity: number;

  constructor(
    private readonly ratePerS: number,
    private readonly windowS: number,
  ) {
    this.capacity = ratePerS * windowS;
  }

  /** Add scheduled pushes; returns the windows that just went over capacity. */
  add(pushes: ReadonlyArray<{ platform: Platform; dueAt: Date }>, now: Date): WaveAlert[] {
    const windowMs = this.windowS * 1000;
    const alerts: WaveAlert[] = [];
    for (const p of pushes) {
      const start = Math.floor(p.dueAt.getTime() / windowMs) * windowMs;
      const key = `${p.platform}:${start}`;
      const count = (this.counts.get(key) ?? 0) + 1;
      this.counts.set(key, count);
      if (count === this.capacity + 1) alerts.push({ platform: p.platform, windowStart: new Date(start), count, capacity: this.capacity });
    }
    this.forgetBefore(now.getTime() - windowMs);
    return alerts.map((a) => ({ ...a, count: this.counts.get(`${a.platform}:${a.windowStart.getTime()}`) ?? a.count }));
  }

  private forgetBefore(ms: number): void {
    for (const key of this.counts.keys()) {
      if (Number(key.slice(key.indexOf(':') + 1)) < ms) this.counts.delete(key);
    }
  }
}
