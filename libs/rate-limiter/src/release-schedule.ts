/**
 * Pure: tokens granted for the rest of a window, released evenly until `end` instead of all at
 * once, so a process holding a whole window's share does not send it in one burst. The first
 * token is released at once; whatever is still unreleased at `end` is released then. (Expiry at
 * the window's end is the caller's business.)
 */
export class ReleaseSchedule {
  private start = 0;
  private end = 0;
  private total = 0;
  private released = 0;

  /** Release the still-unreleased tokens plus `granted` evenly from `nowMs` to `endMs`. */
  reset(granted: number, nowMs: number, endMs: number): void {
    const pending = this.total - this.released;
    this.start = nowMs;
    this.end = Math.max(endMs, nowMs + 1);
    this.total = pending + granted;
    this.released = 0;
  }

  /** Tokens released since the last call. */
  take(nowMs: number): number {
    if (this.total === 0) return 0;
    const due = nowMs >= this.end ? this.total : Math.min(this.total, 1 + Math.floor(((nowMs - this.start) * this.total) / (this.end - this.start)));
    const fresh = Math.max(0, due - this.released);
    this.released += fresh;
    return fresh;
  }

  /** Tokens not yet released. */
  pending(): number {
    return this.total - this.released;
  }

  /** When the next token is released (only meaningful while pending > 0). */
  nextAt(): number {
    return this.start + Math.ceil((this.released * (this.end - this.start)) / this.total);
  }

  /** Forget every unreleased token (their window has ended). */
  clear(): void {
    this.total = 0;
    this.released = 0;
  }
}
