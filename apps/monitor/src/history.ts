import type { QueueSnapshot } from '@herald/monitoring';

/** One poll, reduced to what the charts and the parked-growth rule need. */
export interface Sample {
  at: number;
  depths: ReadonlyMap<string, number>;
}

export interface HistorySeries {
  from: number;
  to: number;
  /** Per queue: [epoch ms, messages] points, oldest first (the deepest reading of each time bucket). */
  queues: Record<string, Array<[number, number]>>;
}

/** An in-memory ring of samples covering the last `retentionMs`. */
export class History {
  private samples: Sample[] = [];

  constructor(private readonly retentionMs: number) {}

  add(at: number, queues: readonly QueueSnapshot[]): void {
    this.samples.push({ at, depths: new Map(queues.map((q) => [q.name, q.messages])) });
    const oldest = at - this.retentionMs;
    const firstKept = this.samples.findIndex((s) => s.at >= oldest);
    if (firstKept > 0) this.samples = this.samples.slice(firstKept);
  }

  /** The smallest depth of `queue` in samples since `since`; undefined when none has it. */
  minSince(queue: string, since: number): number | undefined {
    let min: number | undefined;
    for (const s of this.samples) {
      const d = s.at >= since ? s.depths.get(queue) : undefined;
      if (d !== undefined && (min === undefined || d < min)) min = d;
    }
    return min;
  }

  /** At most `maxPoints` points per queue over the last `windowMs`, keeping each bucket's peak. */
  series(now: number, windowMs: number, maxPoints: number): HistorySeries {
    const from = now - windowMs;
    const bucketMs = Math.max(1, windowMs / maxPoints);
    const queues: Record<string, Array<[number, number]>> = {};
    for (const s of this.samples) {
      if (s.at < from) continue;
      const bucket = from + Math.floor((s.at - from) / bucketMs) * bucketMs;
      for (const [name, depth] of s.depths) {
        const points = (queues[name] ??= []);
        const last = points[points.length - 1];
        if (last !== undefined && last[0] === bucket) last[1] = Math.max(last[1], depth);
        else points.push([bucket, depth]);
      }
    }
    return { from, to: now, queues };
  }
}
