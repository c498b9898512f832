/**
 * Pure local token bucket: `rate` tokens per second, holding at most `capacity`. Used to cap one
 * process's own rate while a provider is pushing back; time is passed in, never read.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private rate: number,
    private readonly capacityMs: number,
    nowMs: number,
  ) {
    this.tokens = 0;
    this.at = nowMs;
  }

  /** Change the rate from now on (tokens already earned are kept, up to the new capacity). */
  setRate(rate: number, nowMs: number): void {
    this.refill(nowMs);
    this.rate = rate;
    this.tokens = Math.min(this.tokens, this.capacity());
  }

  /** Take n tokens (more than the bucket holds counts as a full bucket) if they are there. */
  tryTake(n: number, nowMs: number): boolean {
    this.refill(nowMs);
    const need = Math.min(n, this.capacity());
    if (this.tokens < need) return false;
    this.tokens -= need;
    return true;
  }

  /** How long until tryTake(n) can succeed (0: now). */
  msUntil(n: number, nowMs: number): number {
    this.refill(nowMs);
    const need = Math.min(n, this.capacity());
    if (this.tokens >= need) return 0;
    if (this.rate <= 0) return Number.POSITIVE_INFINITY;
    return Math.ceil(((need - this.tokens) / this.rate) * 1000);
  }

  /** At least one token fits, so a single push is never impossible. */
  private capacity(): number {
    return Math.max(1, (this.rate * this.capacityMs) / 1000);
  }

  private refill(nowMs: number): void {
    const elapsed = Math.max(0, nowMs - this.at);
    this.tokens = Math.min(this.capacity(), this.tokens + (elapsed / 1000) * this.rate);
    this.at = nowMs;
  }
}
