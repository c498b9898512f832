import CircuitBreaker from 'opossum';
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
  /** Sends of a lane within the window before its failures can take it down. */
  minSends: number;
}

/** The window a lane's sends are judged over, and the share of them failing that takes it down. */
const WINDOW_MS = 60_000;
const DOWN_PERCENT = 90;

/** Not sent: the push's lane is down, or another push is trying it (its one trial). */
export type Held = { kind: 'held' };

/** An outage answer, thrown inside the breaker so that it counts as a failure, and returned as it was. */
class OutageAnswer extends Error {
  constructor(readonly result: SendResult) {
    super('outage answer');
  }
}

interface Lane {
  breaker: CircuitBreaker<[() => Promise<SendResult>], SendResult>;
  /** When the lane was taken down (through any trials that failed since); undefined while it answers. */
  downSince?: number;
  /** The last outage answer's reason, for the line that says the lane is down. */
  lastReason?: string;
}

/**
 * One circuit breaker (opossum) per lane of this pusher: the platform's own connection to APNs or
 * FCM, an app's own connection (its endpoint or proxy), a Web Push push service, as the limiter's
 * lanes (pacingLaneOf). Only outage answers count against a lane (SendResult's `outage`: no answer,
 * or a server error without Retry-After), and only pushes' first attempts are sent through it (the
 * pusher): over 90% of at least `minSends` sends in a minute, and the
 * lane is down: its pushes are held, unsent, without spending an attempt (the pusher defers them),
 * until `probeMs` later one push tries it. That one answered, the lane is up again; failed, it stays
 * down another `probeMs`. A push held longer than `holdMs` after it was due is parked instead.
 *
 * What it replaces: every push of an unreachable provider tried on the retry schedule and parked
 * when it ran out (about 13 minutes by default), to be replayed by hand, and in the meantime each
 * pusher's window full of sends waiting for their timeout.
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

  /** Whether pushes of the lane are held as they come: it is down and not yet due its trial. */
  down(lane: string): boolean {
    return this.lanes.get(lane)?.breaker.opened === true;
  }

  /** Since when the lane has been down (trials that failed included), or undefined. */
  downSince(lane: string): number | undefined {
    return this.lanes.get(lane)?.downSince;
  }

  /** `send` through the lane's breaker: its answer, or Held when the lane is down or being tried by another push. */
  async send(lane: string, send: () => Promise<SendResult>): Promise<SendResult | Held> {
    if (this.closed || this.settings.holdMs === 0) return send();
    const l = this.laneOf(lane);
    try {
      return await l.breaker.fire(send);
    } catch (err) {
      if (err instanceof OutageAnswer) return err.result;
      if ((err as { code?: unknown }).code === 'EOPENBREAKER') return { kind: 'held' };
      // Shut down meanwhile (the pusher stopping): sent as without a breaker.
      if ((err as { code?: unknown }).code === 'ESHUTDOWN') return send();
      throw err;
    }
  }

  /** Stops every breaker's timers (the pusher stopping). */
  close(): void {
    this.closed = true;
    for (const l of this.lanes.values()) l.breaker.shutdown();
    this.lanes.clear();
  }

  private laneOf(name: string): Lane {
    const known = this.lanes.get(name);
    if (known !== undefined) return known;
    const breaker = new CircuitBreaker<[() => Promise<SendResult>], SendResult>(
      async (send) => {
        const result = await send();
        if (result.kind === 'transient' && result.outage === true) {
          lane.lastReason = result.reason;
          throw new OutageAnswer(result);
        }
        return result;
      },
      {
        timeout: false, // every provider has its own request timeout
        errorThresholdPercentage: DOWN_PERCENT,
        volumeThreshold: this.settings.minSends,
        rollingCountTimeout: WINDOW_MS,
        rollingCountBuckets: 12,
        resetTimeout: this.settings.probeMs,
      },
    );
    const lane: Lane = { breaker };
    const labels = { platform: this.platform, lane: name };
    breaker.on('open', () => {
      if (lane.downSince !== undefined) return; // a trial failed: still down since then
      lane.downSince = this.now();
      this.gauge?.set(labels, 1);
      this.logger.warn(
        { lane: name, platform: this.platform, reason: lane.lastReason, probeMs: this.settings.probeMs, holdMs: this.settings.holdMs },
        'provider lane down: over 90% of its sends in the last minute got no answer or a server error; its pushes are held (no attempt spent) and one tries it again every probeMs',
      );
    });
    breaker.on('close', () => {
      const downMs = lane.downSince === undefined ? 0 : this.now() - lane.downSince;
      delete lane.downSince;
      this.gauge?.set(labels, 0);
      this.logger.info({ lane: name, platform: this.platform, downMs }, 'provider lane answering again: its held pushes come back within a few minutes');
    });
    this.lanes.set(name, lane);
    return lane;
  }
}
