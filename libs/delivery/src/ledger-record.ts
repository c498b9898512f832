import type { LedgerCompletion } from '@herald/db';
import type { Logger } from '@herald/logging';
import { abortableWait } from '@herald/rate-limiter';

export interface LedgerWriter {
  complete(entries: readonly LedgerCompletion[]): Promise<void>;
}

/** Attempts between two warnings while the database stays away (about one a minute). */
const WARN_EVERY = 30;

/**
 * Mark pushes done, trying again (every 250 ms … 2 s) while the database is away, until it is back
 * or `stop` aborts (the shutdown's bound passed). The provider has already accepted these pushes:
 * giving up while the pusher lives would leave their claims 'sending', and each would be sent a
 * second time once its lease ran out (a 30 s bound did that through a one-minute failover). The
 * batch's messages stay unacked meanwhile; RabbitMQ's consumer_timeout is the outer bound.
 */
export async function completeDurably(
  ledger: LedgerWriter,
  entries: readonly LedgerCompletion[],
  logger: Logger,
  stop?: AbortSignal,
  waiting?: UnrecordedGauge,
): Promise<void> {
  if (entries.length === 0) return;
  // Counted as waiting from its first failure, or once a write has gone unanswered for
  // SLOW_WRITE_MS (a database that vanished without a word: the statement hangs, it does not fail).
  let counted = false;
  const countWaiting = (): void => {
    if (counted) return;
    counted = true;
    waiting?.inc(entries.length);
  };
  const slow = setTimeout(countWaiting, SLOW_WRITE_MS);
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await ledger.complete(entries);
        if (attempt > 1) logger.info({ pushes: entries.length, attempt }, 'pushes recorded in the ledger after the database came back');
        return;
      } catch (err) {
        countWaiting();
        if (stop?.aborted === true) throw err;
        const delayMs = Math.min(2_000, 250 * attempt);
        if (attempt % WARN_EVERY === 1) logger.warn({ err, pushes: entries.length, attempt, delayMs }, 'could not record sent pushes in the ledger; trying again until the database is back');
        if (!(await abortableWait(delayMs, stop))) throw err;
      }
    }
  } finally {
    clearTimeout(slow);
    if (counted) waiting?.dec(entries.length);
  }
}

/** A ledger write unanswered this long counts its pushes as waiting to be recorded. */
const SLOW_WRITE_MS = 5_000;

/** Pushes a provider accepted that are still being recorded (the database away): herald_pusher_unrecorded_pushes. */
export interface UnrecordedGauge {
  inc(n: number): void;
  dec(n: number): void;
}

/** One ledger write: `settled` resolves once it committed or failed for good (then `failure` says why); it never rejects. */
interface Write {
  settled: Promise<void>;
  failure?: unknown;
  resolve(): void;
}

function newWrite(): Write {
  let resolve: () => void = () => undefined;
  const settled = new Promise<void>((r) => (resolve = r));
  return { settled, resolve: () => resolve() };
}

/** The pushes of one batch being recorded: `flush` waits for the writes that carry them, not for other batches'. */
export interface RecordedBatch {
  add(entry: LedgerCompletion): void;
  /** Resolves once everything added is recorded; rejects if the pusher stopped before the ledger was back. */
  flush(): Promise<void>;
}

/**
 * Records delivered pushes as the provider accepts them instead of when a batch's last send has
 * been answered: one write at a time for the whole pusher (every batch in flight), each taking
 * every push accepted since the previous write began (the first, every push accepted in the same
 * turn of the event loop). A push is then unrecorded (the duplicate window of a crash) for about
 * one database round trip, however long the slowest send of its batch takes, and the number of
 * statements is bounded by the round trip, not by the number of batches in flight.
 */
export class DeliveredRecorder {
  private pending: LedgerCompletion[] = [];
  /** The write that will carry `pending`. */
  private next: Write | undefined;
  private writing = false;
  /** For a recorder used by one batch alone (add / flush). */
  private readonly own = this.batch();
  /** The write in progress is counted as waiting (failing, or unanswered for 5 s). */
  private stalled = false;
  /** Of `pending`, how many are counted as waiting: those added behind a stalled write. */
  private countedPending = 0;
  /** The gauge the write in progress counts in; it tells this recorder when that write stalls. */
  private readonly writeGauge: UnrecordedGauge | undefined;

  constructor(
    private readonly ledger: LedgerWriter,
    private readonly logger: Logger,
    private readonly stop?: AbortSignal,
    private readonly waiting?: UnrecordedGauge,
  ) {
    this.writeGauge = waiting && {
      inc: (n) => ((this.stalled = true), waiting.inc(n)),
      dec: (n) => ((this.stalled = false), waiting.dec(n)),
    };
  }

  /** A batch's view: its pushes share writes with every other batch's. */
  batch(): RecordedBatch {
    const writes = new Set<Write>();
    return {
      add: (entry) => void writes.add(this.enqueue(entry)),
      flush: async () => {
        await Promise.all([...writes].map((w) => w.settled));
        const failed = [...writes].find((w) => w.failure !== undefined);
        if (failed !== undefined) throw failed.failure;
      },
    };
  }

  add(entry: LedgerCompletion): void {
    this.own.add(entry);
  }

  /** Resolves once everything passed to `add` is recorded; rejects if the pusher stopped before the ledger was back. */
  flush(): Promise<void> {
    return this.own.flush();
  }

  private enqueue(entry: LedgerCompletion): Write {
    this.pending.push(entry);
    // Behind a stalled write it waits too (the gauge counts every accepted push not yet recorded).
    if (this.stalled) {
      this.countedPending++;
      this.waiting?.inc(1);
    }
    const write = (this.next ??= newWrite());
    if (!this.writing) {
      // The first write starts once this turn of the event loop is done, so the answers that
      // arrived together (the batch's requests went out together) share it.
      this.writing = true;
      setImmediate(() => void this.drain());
    }
    return write;
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const entries = this.pending.splice(0);
      // Their own write counts them from here, if it stalls too.
      this.waiting?.dec(this.countedPending);
      this.countedPending = 0;
      const write = this.next as Write;
      this.next = undefined;
      try {
        await completeDurably(this.ledger, entries, this.logger, this.stop, this.writeGauge);
      } catch (err) {
        write.failure = err;
      }
      write.resolve();
    }
    this.writing = false;
  }
}
