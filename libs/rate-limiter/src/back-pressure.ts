import { Aimd, DEFAULT_AIMD, type AimdOptions } from './aimd.ts';
import { RateMeter } from './rate-meter.ts';
import { TokenBucket } from './token-bucket.ts';

/** What a provider answered, as far as pacing cares (structurally a @herald/providers SendResult). */
export interface ProviderAnswer {
  kind: string;
  reason?: string;
  retryAfterMs?: number;
}

/** APNs 429 TooManyRequests / 503, FCM QUOTA_EXCEEDED / *-rate-exceeded / UNAVAILABLE. */
const THROTTLE = /TooManyRequests|QUOTA_EXCEEDED|rate-exceeded|ServiceUnavailable|\bUNAVAILABLE\b|server-unavailable|HTTP (429|503)/;

export const isThrottle = (answer: ProviderAnswer): boolean =>
  answer.kind === 'transient' && !(answer.reason ?? '').startsWith('transport:') && THROTTLE.test(answer.reason ?? '');

export interface BackPressureOptions {
  aimd?: AimdOptions;
  /** A retry-after longer than this is honoured only up to this long. */
  maxPauseMs?: number;
  /** The slowed-down rate never drops below this many pushes/s. */
  minRatePerSec?: number;
}

/**
 * Pure (time is passed in): this process's reaction to provider push-back. A throttle halves
 * the local rate (AIMD, from the rate measured just before it) and it recovers linearly; a
 * retry-after pauses sending until it has passed. While not slowed down, `delayFor` is 0.
 */
export class BackPressure {
  private readonly aimd: Aimd;
  private readonly meter = new RateMeter();
  private readonly bucket: TokenBucket;
  private reference = 0;
  private pausedUntil = 0;

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

  /** Returns true if the answer slowed this process down. */
  observe(answer: ProviderAnswer, nowMs: number): boolean {
    if (answer.kind !== 'transient') return false;
    let slowed = false;
    if (answer.retryAfterMs !== undefined && answer.retryAfterMs > 0) {
      this.pausedUntil = Math.max(this.pausedUntil, nowMs + Math.min(answer.retryAfterMs, this.options.maxPauseMs ?? 30_000));
      slowed = true;
    }
    if (isThrottle(answer)) {
      const rateBefore = this.factor(nowMs) >= 1 ? this.meter.perSecond(nowMs) : this.reference;
      if (this.aimd.decrease(nowMs)) {
        this.reference = Math.max(rateBefore, this.minRate());
        this.bucket.setRate(this.currentRate(nowMs), nowMs);
        slowed = true;
      }
    }
    return slowed;
  }

  factor(nowMs: number): number {
    return this.aimd.factor(nowMs);
  }

  /** ms to wait before n pushes may go; 0 means go now (and the tokens are taken). */
  delayFor(n: number, nowMs: number): number {
    if (nowMs < this.pausedUntil) return this.pausedUntil - nowMs;
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
