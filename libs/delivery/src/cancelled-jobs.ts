import type { CancelledJobsKey, CancelledJobsReader } from '@herald/db';
import type { Logger } from '@herald/logging';

/** Read again this far back each poll: a cancel committed late with an earlier timestamp is still seen. */
const OVERLAP_MS = 5_000;
const PAGE = 10_000;

/** What cancelledJobsRetentionMs keeps beyond PREFERENCES_RECHECK_AFTER_MS: clocks that disagree, a long wait for budget. */
export const CANCELLED_JOBS_MARGIN_MS = 3_600_000;

/**
 * How long a pusher remembers a cancel. A push whose preferences were asked longer ago than
 * `recheckMs` (PREFERENCES_RECHECK_AFTER_MS) has its job's cancel asked again in its claim
 * (claimLive's recheck), so only younger pushes rely on this list: it keeps the cancels of that
 * window and an hour more, not every cancel of LEDGER_RETENTION_HOURS (a week of a tenant's
 * "remind me unless" cancels, about 100 bytes each, held in every pusher and read at each start).
 */
export const cancelledJobsRetentionMs = (recheckMs: number): number => recheckMs + CANCELLED_JOBS_MARGIN_MS;

/**
 * The jobs cancelled lately (DELETE /v1/jobs/:id, herald job cancel), kept in memory and refreshed
 * from PostgreSQL every `intervalMs`, so a pusher drops a cancelled job's queued pushes with one
 * Set lookup per push (no round trip on the hot path). Ids older than `retentionMs` are forgotten.
 */
export class CancelledJobs {
  private readonly ids = new Map<string, number>();
  private cursor: Date;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly reader: CancelledJobsReader,
    private readonly opts: { intervalMs: number; retentionMs: number; logger: Logger },
  ) {
    this.cursor = new Date(Date.now() - opts.retentionMs);
  }

  has(jobId: string): boolean {
    return this.ids.has(jobId);
  }

  get size(): number {
    return this.ids.size;
  }

  /** One poll: add the jobs cancelled since the last one, forget the old ones. */
  async refresh(): Promise<void> {
    const since = new Date(this.cursor.getTime() - OVERLAP_MS);
    // Later pages continue after the last (cancelled_at, id) read, so a poll ends however many share a timestamp.
    let after: CancelledJobsKey | undefined;
    for (;;) {
      const rows = await this.reader.since(since, PAGE, after);
      for (const r of rows) {
        this.ids.set(r.jobId, r.cancelledAt.getTime());
        if (r.cancelledAt > this.cursor) this.cursor = r.cancelledAt;
      }
      const last = rows[rows.length - 1];
      if (rows.length < PAGE || last === undefined) break;
      after = { at: last.at, jobId: last.jobId };
    }
    const oldest = Date.now() - this.opts.retentionMs;
    for (const [id, at] of this.ids) if (at < oldest) this.ids.delete(id);
  }

  /** Load once (awaited, so no cancelled push slips through at start-up), then poll. */
  async start(): Promise<void> {
    await this.refresh();
    const tick = (): void => {
      this.running = this.refresh()
        .catch((err: unknown) => this.opts.logger.warn({ err }, 'could not refresh the cancelled jobs; keeping the last list'))
        .finally(() => {
          if (this.timer !== undefined) this.timer = setTimeout(tick, this.opts.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.opts.intervalMs);
  }

  async stop(): Promise<void> {
    const t = this.timer;
    this.timer = undefined;
    if (t !== undefined) clearTimeout(t);
    await this.running;
  }
}
