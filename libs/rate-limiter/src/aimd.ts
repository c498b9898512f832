export interface AimdOptions {
  /** The factor never drops below this (e.g. 0.05: at worst 5% of the rate before the throttle). */
  minFactor: number;
  /** Additive recovery: factor points regained per second (0.1: from ½ back to 1 in 5 s). */
  recoveryPerSec: number;
  /** Throttle signals closer together than this count once (one burst of 429s halves once). */
  cooldownMs: number;
}

export const DEFAULT_AIMD: AimdOptions = { minFactor: 0.05, recoveryPerSec: 0.1, cooldownMs: 1000 };

/**
 * Pure additive-increase / multiplicative-decrease factor in (0, 1]: a provider throttle halves
 * it, then it climbs back linearly with time. 1 means "not slowed down".
 */
export class Aimd {
  private base = 1;
  private since = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: AimdOptions = DEFAULT_AIMD) {}

  factor(nowMs: number): number {
    if (this.since === Number.NEGATIVE_INFINITY) return 1;
    const recovered = this.base + ((nowMs - this.since) / 1000) * this.options.recoveryPerSec;
    return Math.min(1, recovered);
  }

  /** ms until the factor is back at 1 (0: it is). */
  msUntilRecovered(nowMs: number): number {
    const left = 1 - this.factor(nowMs);
    return left <= 0 ? 0 : Math.ceil((left / this.options.recoveryPerSec) * 1000);
  }

  /** A throttle signal at nowMs; returns true if it lowered the factor (false inside the cooldown). */
  decrease(nowMs: number): boolean {
    if (nowMs - this.since < this.options.cooldownMs) return false;
    this.base = Math.max(this.options.minFactor, this.factor(nowMs) / 2);
    this.since = nowMs;
    return true;
  }
}
