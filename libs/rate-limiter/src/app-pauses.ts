/**
 * Pure (time is passed in): apps a provider told to hold back (Retry-After), each until a time on
 * this process's clock. A pause only ever grows: a shorter Retry-After, or an older copy of the
 * fleet's pause, never cuts one short.
 */
export class AppPauses {
  private readonly until = new Map<string, number>();

  /** Hold `app` back until untilMs; true if that is later than its pause so far. */
  extend(app: string, untilMs: number): boolean {
    if (untilMs <= (this.until.get(app) ?? 0)) return false;
    this.until.set(app, untilMs);
    return true;
  }

  /** ms until `app` may send again; 0 when it is not paused. */
  msLeft(app: string, nowMs: number): number {
    const until = this.until.get(app);
    return until === undefined ? 0 : Math.max(0, until - nowMs);
  }

  /** When `app`'s pause ends (0: never paused, or forgotten). */
  endOf(app: string): number {
    return this.until.get(app) ?? 0;
  }

  /** Forget pauses that have ended; returns their apps. */
  prune(nowMs: number): string[] {
    const ended = [...this.until].filter(([, until]) => until <= nowMs).map(([app]) => app);
    ended.forEach((app) => this.until.delete(app));
    return ended;
  }
}
