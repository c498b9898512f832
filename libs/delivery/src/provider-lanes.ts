import type { Logger } from '@herald/logging';
import type { SendResult } from '@herald/providers';
import type { Gauge } from '@herald/runtime';

/** When a lane is taken to be down, and how long its pushes are held (PROVIDER_DOWN_* settings). */
export interface LaneSettings {
  /**
   * How long after it was due (accepted, or fell due) a push is held while its lane is down; past
   * it, it is parked (provider-down), to be replayed once the provider answers. 0: never held.
   */
  holdMs: number;
  /** How long a lane taken to be down waits before one push tries it again. */
  probeMs: number;
  /** Fresh sends of a lane that failed within the window before it can be taken down. */
  minSends: number;
  /** How long fresh sends must have been failing before the lane is taken down (a burst of one dropped connection is not an outage). */
  afterMs: number;
}

/** The window a lane's fresh sends are judged over, in buckets, and the share of them failing that takes it down. */
const BUCKET_MS = 5_000;
const BUCKETS = 12;
const DOWN_SHARE = 0.9;
/** Probe intervals a lane due its trial may go without one (no push of it came) before it is taken as up again. */
const QUIET_PROBES = 3;

/** Not sent: the push's lane is down, or another push is trying it (its one trial). */
export type Held = { kind: 'held' };

type Bucket = { slot: number; answered: number; failed: number; firstFailedAt: number };

interface Lane {
  buckets: Bucket[];
  /** Set while the lane is down (through any trials that failed since). */
  downSince?: number;
  /** While down: when a push may try it next. */
  probeAt: number;
  trying: boolean;
  quiet?: NodeJS.Timeout;
  /** The last outage answer's reason, for the line that says the lane is down. */
  lastReason?: string;
}

const isOutage = (r: SendResult): r is Extract<SendResult, { kind: 'transient' }> => r.kind === 'transient' && r.outage === true;

/**
 * Each lane of this pusher judged apart, as a circuit breaker: the platform's own connection to
 * APNs or FCM, an app's own connection (its endpoint or proxy), a Web Push push service, as the
 * limiter's lanes (pacingLaneOf). Only outage answers count against a lane (SendResult's `outage`:
 * no answer, or a server error without Retry-After), and only answers to fresh sends (pushes never
 * sent before): a push failing alone (its payload, its token) fails again on each retry and on each
 * return from a hold, and those, alone in a quiet lane, would take it down; an outage fails the
 * fresh ones too. Over 90% of them failing in the last minute, at least `minSends`, the earliest
 * `afterMs` ago or more, and the lane is down: its pushes are held, unsent, without spending an
 * attempt (the pusher defers them), until `probeMs` later one push (any) tries it. That one answered
 * (anything but an outage answer), the lane is up again, its window emptied; failed, it stays down
 * another `probeMs`. A lane due its trial that no push comes to try for three probe intervals is
 * taken as up (a quiet lane, or one no longer used).
 *
 * Hand-written rather than a library's breaker (opossum was tried): its rolling error share counts
 * calls refused while open as calls, keeps the window through a recovery (one failure after it took
 * the lane down again), sorts a minute of latencies on each failure, and cannot ask that the
 * failures have lasted a while, so one dropped connection's burst took a lane down.
 */
export class ProviderLanes {
  private readonly lanes = new Map<string, Lane>();
  private closed = false;

  constructor(
    readonly settings: LaneSettings,
    private readonly platform: string,
    private readonly logger: Logger,
    private readonly gauge?: Gauge<'platform' | 'lane'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether pushes of the lane are held as they come: it is down, and not due its trial (or being tried). */
  down(lane: string): boolean {
    const l = this.lanes.get(lane);
    return l?.downSince !== undefined && (l.trying || this.now() < l.probeAt);
  }

  /** Since when the lane has been down (trials that failed included), or undefined. */
  downSince(lane: string): number | undefined {
    return this.lanes.get(lane)?.downSince;
  }

  /**
   * `send` on the lane: its answer, or Held when the lane is down (and not due its trial, or being
   * tried by another push). `fresh`: the push was never sent before, so its answer is judged.
   */
  async send(lane: string, send: () => Promise<SendResult>, fresh: boolean): Promise<SendResult | Held> {
    if (this.closed || this.settings.holdMs === 0) return send();
    const l = this.laneOf(lane);
    if (l.downSince === undefined) {
      const result = await send();
      if (fresh) this.judge(lane, l, result);
      return result;
    }
    if (l.trying || this.now() < l.probeAt) return { kind: 'held' };
    l.trying = true;
    try {
      const result = await send();
      if (isOutage(result)) {
        l.lastReason = result.reason;
        l.probeAt = this.now() + this.settings.probeMs;
        this.watchQuiet(lane, l);
      } else this.up(lane, l, 'answered');
      return result;
    } finally {
      l.trying = false;
    }
  }

  /** Stops the quiet timers (the pusher stopping); sends go on unjudged. */
  close(): void {
    this.closed = true;
    for (const l of this.lanes.values()) clearTimeout(l.quiet);
    this.lanes.clear();
  }

  private laneOf(name: string): Lane {
    let l = this.lanes.get(name);
    if (l === undefined) {
      l = { buckets: [], probeAt: 0, trying: false };
      this.lanes.set(name, l);
    }
    return l;
  }

  private judge(name: string, l: Lane, result: SendResult): void {
    // Sent before the lane went down, answered since: the lane is judged already.
    if (l.downSince !== undefined) return;
    const now = this.now();
    const slot = Math.floor(now / BUCKET_MS);
    let bucket = l.buckets[l.buckets.length - 1];
    if (bucket?.slot !== slot) {
      bucket = { slot, answered: 0, failed: 0, firstFailedAt: Number.POSITIVE_INFINITY };
      l.buckets = [...l.buckets.filter((b) => b.slot > slot - BUCKETS), bucket];
    }
    if (!isOutage(result)) {
      bucket.answered += 1;
      return;
    }
    bucket.failed += 1;
    bucket.firstFailedAt = Math.min(bucket.firstFailedAt, now);
    l.lastReason = result.reason;
    let answered = 0;
    let failed = 0;
    let since = now;
    for (const b of l.buckets) {
      answered += b.answered;
      failed += b.failed;
      since = Math.min(since, b.firstFailedAt);
    }
    if (failed >= this.settings.minSends && failed > DOWN_SHARE * (answered + failed) && now - since >= this.settings.afterMs) this.takeDown(name, l, failed, answered + failed);
  }

  private takeDown(name: string, l: Lane, failed: number, sends: number): void {
    const now = this.now();
    l.downSince = now;
    l.probeAt = now + this.settings.probeMs;
    this.gauge?.set({ platform: this.platform, lane: name }, 1);
    this.watchQuiet(name, l);
    this.logger.warn(
      { lane: name, platform: this.platform, reason: l.lastReason, failed, sends, probeMs: this.settings.probeMs, holdMs: this.settings.holdMs },
      'provider lane down: over 90% of its fresh sends in the last minute got no answer or a server error; its pushes are held (no attempt spent) and one tries it again every probeMs',
    );
  }

  private up(name: string, l: Lane, why: 'answered' | 'quiet'): void {
    const downMs = l.downSince === undefined ? 0 : this.now() - l.downSince;
    delete l.downSince;
    l.buckets = [];
    clearTimeout(l.quiet);
    this.gauge?.set({ platform: this.platform, lane: name }, 0);
    if (why === 'answered') this.logger.info({ lane: name, platform: this.platform, downMs }, 'provider lane answering again: its held pushes come back within a few minutes');
    else this.logger.info({ lane: name, platform: this.platform, downMs }, 'provider lane quiet: no push came to try it for three probe intervals; taken as up');
  }

  /** A lane due its trial that no push tries for QUIET_PROBES probe intervals is taken as up. */
  private watchQuiet(name: string, l: Lane): void {
    clearTimeout(l.quiet);
    const probeAt = l.probeAt;
    l.quiet = setTimeout(() => {
      if (l.downSince !== undefined && !l.trying && l.probeAt === probeAt) this.up(name, l, 'quiet');
    }, this.settings.probeMs * (1 + QUIET_PROBES));
    l.quiet.unref();
  }
}
