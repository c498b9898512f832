/** Pure: this process's send rate over the last second, from 100 ms buckets. */
export class RateMeter {
  private readonly buckets = new Array<number>(10).fill(0);
  private bucketAt = 0;

  record(n: number, nowMs: number): void {
    this.roll(nowMs);
    const i = Math.floor(nowMs / 100) % 10;
    this.buckets[i] = (this.buckets[i] ?? 0) + n;
  }

  perSecond(nowMs: number): number {
    this.roll(nowMs);
    return this.buckets.reduce((a, b) => a + b, 0);
  }

  /** Zero the buckets that belong to windows which ended more than a second ago. */
  private roll(nowMs: number): void {
    const current = Math.floor(nowMs / 100);
    const stale = Math.min(10, current - this.bucketAt);
    for (let k = 1; k <= stale; k++) this.buckets[(this.bucketAt + k) % 10] = 0;
    if (current > this.bucketAt) this.bucketAt = current;
  }
}
