import type { Logger } from '@herald/logging';

/** How long a pusher keeps trying to record accepted pushes: a PostgreSQL restart or failover takes seconds. */
export const RECORD_RETRY_MS = 30_000;

export interface LedgerWriter {
  complete(entries: ReadonlyArray<{ pushId: string; outcome: string }>): Promise<void>;
}

/**
 * Mark pushes done, trying again (every 250 ms … 2 s) while the database is away, for at most
 * `withinMs`. The provider has already accepted these pushes: giving up at the first error would
 * leave their claims 'sending', and each would be sent a second time once its lease ran out.
 */
export async function completeDurably(
  ledger: LedgerWriter,
  entries: ReadonlyArray<{ pushId: string; outcome: string }>,
  logger: Logger,
  withinMs = RECORD_RETRY_MS,
): Promise<void> {
  if (entries.length === 0) return;
  const deadline = Date.now() + withinMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await ledger.complete(entries);
      if (attempt > 1) logger.info({ pushes: entries.length, attempt }, 'pushes recorded in the ledger after the database came back');
      return;
    } catch (err) {
      const delayMs = Math.min(2_000, 250 * attempt);
      if (Date.now() + delayMs > deadline) throw err;
      logger.warn({ err, pushes: entries.length, attempt, delayMs }, 'could not record sent pushes in the ledger; trying again');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

type Entry = { pushId: string; outcome: string };

/**
 * Records delivered pushes as the provider accepts them instead of when a batch's last send has
 * been answered: one write at a time, each taking every push accepted since the previous write.
 * A push is then unrecorded (the duplicate window of a crash) for about one database round trip,
 * however long the slowest send of its batch takes.
 */
export class DeliveredRecorder {
  private pending: Entry[] = [];
  private writing: Promise<void> | undefined;
  private failure: unknown;

  constructor(
    private readonly ledger: LedgerWriter,
    private readonly logger: Logger,
    private readonly withinMs = RECORD_RETRY_MS,
  ) {}

  add(entry: Entry): void {
    this.pending.push(entry);
    this.writing ??= this.drain();
  }

  /** Resolves once everything added is recorded; rejects if the ledger stayed unreachable. */
  async flush(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
    if (this.failure !== undefined) throw this.failure;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) await completeDurably(this.ledger, this.pending.splice(0), this.logger, this.withinMs);
    } catch (err) {
      this.failure = err;
    } finally {
      this.writing = undefined;
    }
  }
}
