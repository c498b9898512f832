import type { Logger } from '@herald/logging';
import { isRefusal, type SendResult } from '@herald/providers';
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
  /** Fresh sends of a lane that failed in a row, and within the window, before it can be taken down. */
  minSends: number;
  /** How long fresh sends must have been failing before the lane is taken down (a burst of one dropped connection is not an outage). */
  afterMs: number;
  /**
   * How long past its trial's due time a down lane may go without a push coming to try it before
   * it is no longer said to be down (its gauge): longer than a held push waits in a delay queue
   * (run-pusher: the longest hold delay and a fifth more). It stays due its trial.
   */
  quietMs: number;
}

/** The window a lane's fresh sends are judged over, in buckets, and the share of them failing that takes it down. */
const BUCKET_MS = 5_000;
const BUCKETS = 12;
const DOWN_SHARE = 0.9;

/** Not sent: the push's lane is down, or another push is trying it (its one trial). */
export type Held = { kind: 'held' };

type Bucket = { slot: number; answered: number; failed: number; firstFailedAt: number };

interface Lane {
  buckets: Bucket[];
  /** Set while the lane is down (through any trials that failed since), on the lanes' clock. */
  downSince?: number;
  /** While down: when a push may try it next. */
  probeAt: number;
  trying: boolean;
  /** Fresh sends failed in a row, lately (an answered send, a retry's too, ends the row). */
  failedInRow: number;
  /** Whether a down lane has gone quietMs past its trial's due time with no push to try it. */
  quiet: boolean;
  quietTimer?: NodeJS.Timeout;
  /** The last outage answer's reason, for the line that says the lane is down. */
  lastReason?: string;
}

const isOutage = (r: SendResult): r is Extract<SendResult, { kind: 'transient' }> => r.kind === 'transient' && r.outage === true;

/** Refused by Herald before any request (SendResult `notSent`): no answer of the provider's, good or bad. */
const notSent = (r: SendResult): boolean => isRefusal(r);

/**
 * Each lane of this pusher judged apart, as a circuit breaker: the platform's own connection to
 * APNs or FCM, an app's own connection (its endpoint or proxy), a Web Push push service, as the
 * limiter's lanes (pacingLaneOf). Only outage answers count against a lane (SendResult's `outage`:
 * no answer, or a server error without Retry-After), and only answers to fresh sends (pushes never
 * sent before): a push failing alone (its payload, its token) fails again on each retry and on each
 * return from a hold, and those, alone in a quiet lane, would take it down; an outage fails the
 * fresh ones too. The last `minSends` of them failed in a row (it is failing now), over 90% of the
 * minute's failed, the earliest `afterMs` ago or more, and the lane is down: its pushes are held, unsent, without spending an
 * attempt (the pusher defers them), until `probeMs` later one push (any) tries it. That one answered
 * (anything but an outage answer), the lane is up again, its window emptied; failed, it stays down
 * another `probeMs`. A lane due its trial that no push comes to try for `quietMs` (longer than a
 * held push waits in a delay queue) is no longer said to be down, and stays due its trial. A push
 * Herald refused before sending it (SendResult's `notSent`: an endpoint whose address is not public,
 * a key this process does not hold) is no answer at all: it is not judged, ends no row of failures,
 * and is no trial (the lane stays due one, made by the next push); counted as answered, a trial
 * refused so lifted a lane still down, its held pushes sent into the outage.
 *
 * Hand-written rather than a library's breaker (opossum was tried): its rolling error share counts
 * calls refused while open as calls, keeps the window through a recovery (one failure after it took
 * the lane down again), sorts a minute of latencies on each failure, and cannot ask that the
 * failures have lasted a while, so one dropped connection's burst took a lane down.
 */
export class ProviderLanes {
  private readonly lanes = new Map<string, Lane>();
  private closed = false;
  private onChange: (() => void) | undefined;

  constructor(
    readonly settings: LaneSettings,
    private readonly platform: string,
    private readonly logger: Logger,
    private readonly gauge?: Gauge<'platform' | 'lane'>,
    /** A monotonic clock (a wall clock stepped back would hold a down lane's trials that long). */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether pushes of the lane are held as they come: it is down, and not due its trial (or being tried). */
  down(lane: string): boolean {
    const l = this.lanes.get(lane);
    return l?.downSince !== undefined && (l.trying || this.now() < l.probeAt);
  }

  /** Since when the lane has been down (trials that failed included), on the lanes' clock, or undefined. */
  downSince(lane: string): number | undefined {
    return this.lanes.get(lane)?.downSince;
  }

  /** How long the lane has been down, or undefined. */
  downForMs(lane: string): number | undefined {
    const since = this.downSince(lane);
    return since === undefined ? undefined : this.now() - since;
  }

  /** The lanes said to be down now (their gauge at 1: not quiet), and for how long. */
  saidDown(): Array<{ lane: string; downForMs: number }> {
    const now = this.now();
    return [...this.lanes].flatMap(([lane, l]) => (l.downSince === undefined || l.quiet ? [] : [{ lane, downForMs: now - l.downSince }]));
  }

  /** `listener` is told each time a lane is said down or no longer (lane-state-recorder.ts: told, never awaited). */
  watch(listener: () => void): void {
    this.onChange = listener;
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
      // Nothing reached the provider: nothing to judge it by.
      if (notSent(result)) return result;
      if (fresh) this.judge(lane, l, result);
      // A push sent before, answered: the lane answers (it judges nothing else).
      else if (!isOutage(result)) l.failedInRow = 0;
      return result;
    }
    if (l.trying || this.now() < l.probeAt) return { kind: 'held' };
    l.trying = true;
    // The first trial after a quiet spell: its down time counts from here (pushes held beside it
    // wait a probe interval, not the hours it was quiet).
    if (l.quiet) l.downSince = this.now();
    try {
      const result = await send();
      // Refused before it was sent: no trial. The lane stays down and due its trial, which the next push makes.
      if (notSent(result)) return result;
      if (isOutage(result)) {
        l.lastReason = result.reason;
        l.probeAt = this.now() + this.settings.probeMs;
        if (l.quiet) {
          // Quiet for a while, and failing still: said down again.
          l.quiet = false;
          this.say(lane, true);
          this.logger.warn({ lane, platform: this.platform, reason: result.reason, probeMs: this.settings.probeMs }, 'provider lane down: its first push after a quiet spell got no answer or a server error; its pushes are held (no attempt spent) and one tries it again every probeMs');
        }
        this.watchQuiet(lane, l);
      } else this.up(lane, l);
      return result;
    } finally {
      l.trying = false;
    }
  }

  /** Stops the quiet timers (the pusher stopping); sends go on unjudged. */
  close(): void {
    this.closed = true;
    for (const l of this.lanes.values()) clearTimeout(l.quietTimer);
    this.lanes.clear();
  }

  /** The lane said down or no longer: its gauge, and the watcher. */
  private say(name: string, down: boolean): void {
    this.gauge?.set({ platform: this.platform, lane: name }, down ? 1 : 0);
    this.onChange?.();
  }

  private laneOf(name: string): Lane {
    let l = this.lanes.get(name);
    if (l === undefined) {
      l = { buckets: [], probeAt: 0, trying: false, failedInRow: 0, quiet: false };
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
      l.failedInRow = 0;
      return;
    }
    bucket.failed += 1;
    bucket.firstFailedAt = Math.min(bucket.firstFailedAt, now);
    l.lastReason = result.reason;
    l.failedInRow += 1;
    // Failing now (the last minSends in a row), over 90% of the minute's, since afterMs ago or more:
    // not a burst that is over (one dropped connection's, the lane answering since).
    if (l.failedInRow < this.settings.minSends) return;
    // (failedInRow has no time bound: the window must hold minSends failures of its own.)
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
    this.say(name, true);
    this.watchQuiet(name, l);
    this.logger.warn(
      { lane: name, platform: this.platform, reason: l.lastReason, failed, sends, probeMs: this.settings.probeMs, holdMs: this.settings.holdMs },
      'provider lane down: its last fresh sends got no answer or a server error, minSends in a row and over 90% of the last minute\'s, for afterMs or more; its pushes are held (no attempt spent) and one tries it again every probeMs',
    );
  }

  private up(name: string, l: Lane): void {
    const downMs = l.downSince === undefined ? 0 : this.now() - l.downSince;
    delete l.downSince;
    l.quiet = false;
    l.buckets = [];
    l.failedInRow = 0;
    clearTimeout(l.quietTimer);
    this.say(name, false);
    this.logger.info({ lane: name, platform: this.platform, downMs }, 'provider lane answering again: its held pushes come back within as long as it was down, a fifth more at random (24 minutes at most)');
  }

  /**
   * A down lane due its trial that no push tries for quietMs after it fell due (a lane no longer
   * used, or its held pushes gone to other pushers or behind a backlog) is no longer said to be down
   * (its gauge 0, a line), but stays due its trial: the next push of it, of any kind, tries it, and
   * so held pushes coming back late are not sent unjudged into an outage. That trial failing, the
   * lane is said down again (a line), its down time counted from then.
   */
  private watchQuiet(name: string, l: Lane): void {
    clearTimeout(l.quietTimer);
    const probeAt = l.probeAt;
    l.quietTimer = setTimeout(() => {
      if (l.downSince === undefined || l.probeAt !== probeAt) return;
      if (l.trying) return this.watchQuiet(name, l);
      const downMs = this.now() - l.downSince;
      l.quiet = true;
      this.say(name, false);
      this.logger.info(
        { lane: name, platform: this.platform, downMs, quietMs: this.settings.quietMs },
        'provider lane quiet: no push came to try it for quietMs after it was due its trial; no longer said down, the next push of it tries it',
      );
    }, this.settings.probeMs + this.settings.quietMs);
    l.quietTimer.unref();
  }
}
