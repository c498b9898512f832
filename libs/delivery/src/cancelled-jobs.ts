import type { CancelledJobsKey, CancelledJobsReader } from '@herald/db';
import type { Logger } from '@herald/logging';

/** Read again this far back each poll: a cancel committed late with an earlier timestamp is still seen. */
const OVERLAP_MS = 5_000;
const PAGE = 10_000;

/** How long a cancel is kept beyond PREFERENCES_RECHECK_AFTER_MS: clocks that disagree, a long wait for budget. */
export const CANCELLED_JOBS_MARGIN_MS = 3_600_000;

/**
 * The jobs cancelled lately (DELETE /v1/jobs/:id, herald job cancel) — for PREFERENCES_RECHECK_AFTER_MS
 * and an hour: a push whose preferences were asked longer ago than that has its job's cancel asked
 * again in its claim (claimLive's recheck), so only younger pushes rely on this list, not every
 * cancel of LEDGER_RETENTION_HOURS (a week of a tenant's "remind me unless" cancels, about 100
 * bytes each, held in every pusher and read at each start) — kept in memory and refreshed
 * from PostgreSQL every `intervalMs`, so a pusher drops a cancelled job's queued pushes with one
 * Set lookup per push (no round trip on the hot path). Older ids are forgotten.
 */
export class CancelledJobs {
  private readonly ids = new Map<string, number>();
  private cursor: Date;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly reader: CancelledJobsReader,
    private readonly opts: {
      intervalMs: number;
      /** PREFERENCES_RECHECK_AFTER_MS: cancels are kept this long and `marginMs` more. */
      recheckMs: number;
      /** Default CANCELLED_JOBS_MARGIN_MS. */
      marginMs?: number;
      logger: Logger;
    },
  ) {
    this.retentionMs = opts.recheckMs + (opts.marginMs ?? CANCELLED_JOBS_MARGIN_MS);
    this.cursor = new Date(Date.now() - this.retentionMs);
  }

  private readonly retentionMs: number;

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
    const oldest = Date.now() - this.retentionMs;
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
