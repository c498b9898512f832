import { Aimd, DEFAULT_AIMD, type AimdOptions } from './aimd.ts';
import { RateMeter } from './rate-meter.ts';
import { TokenBucket } from './token-bucket.ts';

export interface BackPressureOptions {
  aimd?: AimdOptions;
  /** A Retry-After longer than this is honoured only up to this long. Default 10 min. */
  maxPauseMs?: number;
  /** The slowed-down rate never drops below this many pushes/s. */
  minRatePerSec?: number;
}

/**
 * Pure (time is passed in): one sender's pacing under provider throttles (the whole platform in
 * this process, or one app in this process). A throttle halves the rate (AIMD, from the rate
 * measured just before it: what was sent, or what was asked for if more) and it recovers
 * linearly. While not slowed down, `delayFor` is 0.
 */
export class BackPressure {
  private readonly aimd: Aimd;
  private readonly meter = new RateMeter();
  /** Pushes that asked to go (sent or not): a quiet sender meeting a wave is halved from the wave. */
  private readonly demand = new RateMeter();
  private readonly bucket: TokenBucket;
  private reference = 0;

  constructor(
    private readonly options: BackPressureOptions,
    nowMs: number,
  ) {
    this.aimd = new Aimd(options.aimd ?? DEFAULT_AIMD);
    this.bucket = new TokenBucket(1, 100, nowMs);
  }

  sent(n: number, nowMs: number): void {
    this.meter.record(n, nowMs);
  }

  /** n pushes asked to go (before any wait for budget or pacing). */
  wanted(n: number, nowMs: number): void {
    this.demand.record(n, nowMs);
  }

  /**
   * A throttle signal; returns true if it lowered the rate (false inside the AIMD cooldown). The
   * rate halved is the larger of what went and what asked to go in the last second: halved from
   * what a quiet pusher had just sent (a start, the first pushes of a morning wave), one APNs 503
   * held the whole platform in that process at 1 push/s, and each 503 of a brownout kept it there.
   */
  throttled(nowMs: number): boolean {
    const rateBefore = this.factor(nowMs) >= 1 ? Math.max(this.meter.perSecond(nowMs), this.demand.perSecond(nowMs)) : this.reference;
    if (!this.aimd.decrease(nowMs)) return false;
    this.reference = Math.max(rateBefore, this.minRate());
    this.bucket.setRate(this.currentRate(nowMs), nowMs);
    return true;
  }

  factor(nowMs: number): number {
    return this.aimd.factor(nowMs);
  }

  /** The rate it is slowed down to now (pushes/s) and in how many ms it is back to full; undefined while not slowed down. */
  slowdown(nowMs: number): { ratePerSec: number; endsInMs: number } | undefined {
    if (this.factor(nowMs) >= 1) return undefined;
    return { ratePerSec: this.currentRate(nowMs), endsInMs: this.aimd.msUntilRecovered(nowMs) };
  }

  /** ms to wait before n pushes may go; 0 means go now (and the tokens are taken). */
  delayFor(n: number, nowMs: number): number {
    if (this.factor(nowMs) >= 1) return 0;
    this.bucket.setRate(this.currentRate(nowMs), nowMs);
    if (this.bucket.tryTake(n, nowMs)) return 0;
    return Math.max(1, this.bucket.msUntil(n, nowMs));
  }

  private currentRate(nowMs: number): number {
    return Math.max(this.minRate(), this.reference * this.factor(nowMs));
  }

  private minRate(): number {
    return this.options.minRatePerSec ?? 1;
  }
}
