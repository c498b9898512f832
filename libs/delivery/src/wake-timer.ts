/**
 * A sleep that can be cut short: `sleep(ms)` resolves after ms, or at once when `wakeIf`
 * is given a time earlier than the planned wake-up (or when `wake()` is called).
 */
export class WakeTimer {
  /** `now`: the clock the times given to wakeIf are read by (a descheduler's: PostgreSQL's), in epoch ms. */
  constructor(private readonly now: () => number = Date.now) {}

  private wakeAt = Infinity;
  private resolve: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Set when a wake-up arrived while not sleeping, so the next sleep returns at once. */
  private pending = false;

  sleep(ms: number): Promise<void> {
    if (this.pending || ms <= 0) {
      this.pending = false;
      return Promise.resolve();
    }
    this.wakeAt = this.now() + ms;
    return new Promise((resolve) => {
      this.resolve = resolve;
      this.timer = setTimeout(() => this.wake(), ms);
    });
  }

  /** Wake now if `at` is earlier than the planned wake-up. */
  wakeIf(at: Date): void {
    if (at.getTime() < this.wakeAt) this.wake();
  }

  wake(): void {
    clearTimeout(this.timer);
    const resolve = this.resolve;
    this.resolve = undefined;
    this.wakeAt = Infinity;
    if (resolve === undefined) this.pending = true;
    else resolve();
  }
}
