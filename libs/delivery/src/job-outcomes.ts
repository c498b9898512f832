import type { DevicePush } from '@herald/contracts';
import { refusedValueReason, type PushOutcomeEntry } from '@herald/db';
import type { Logger } from '@herald/logging';

/** A device push's final outcome as the pusher decides it (parks reach the status through park-outcomes.ts). */
export type JobOutcome = 'delivered' | 'invalid' | 'expired' | 'cancelled' | 'opted-out' | 'muted';

/** What the provider answered, or why: kept with the outcome for GET /v1/jobs/:id/pushes. */
export interface OutcomeDetail {
  code?: string;
  reason?: string;
  providerMessageId?: string;
}

export interface JobOutcomeStore {
  recordOutcomes(entries: readonly PushOutcomeEntry[]): Promise<void>;
}

export interface JobOutcomeRecorder {
  /** Remember an outcome; written by the next flush. */
  note(push: DevicePush, outcome: JobOutcome, detail?: OutcomeDetail): void;
  /** Remember an outcome given whole (a park's: park-outcomes.ts); written by the next flush. */
  noteEntry(entry: PushOutcomeEntry): void;
  /** Write what was noted (one statement). Never throws: job status is advisory, delivery is not held up. */
  flush(): Promise<void>;
}

export const outcomeEntry = (push: Pick<DevicePush, 'pushId' | 'jobId' | 'platform' | 'deviceId'>, outcome: PushOutcomeEntry['outcome'], detail: OutcomeDetail = {}): PushOutcomeEntry => ({
  pushId: push.pushId,
  jobId: push.jobId,
  outcome,
  platform: push.platform,
  deviceId: push.deviceId,
  ...detail,
});

/** Outcomes kept for the next flush while PostgreSQL refuses them (about 200 bytes each). */
export const MAX_PENDING_OUTCOMES = 50_000;

/**
 * Outcomes noted and written a batch a flush. A batch PostgreSQL refuses (a failover, a lost
 * connection) is kept for the next flush, as the writes are upserts: dropped, its pushes showed in
 * flight for good and the job's status never added up. Past MAX_PENDING_OUTCOMES the oldest go,
 * with a warning, so an outage cannot grow the pusher without bound.
 */
export function createJobOutcomeRecorder(store: JobOutcomeStore, logger: Logger, maxPending = MAX_PENDING_OUTCOMES): JobOutcomeRecorder {
  let pending: PushOutcomeEntry[] = [];
  /**
   * A batch PostgreSQL refuses for a value in it (a NUL byte, a key too long for its index) would
   * be refused at every flush, every outcome noted after it kept behind it until the oldest were
   * dropped: written in halves, then halves of the half refused, down to the entries it refuses,
   * which are dropped (with a warning), the rest written (a few statements a refused entry).
   */
  const writeApart = async (batch: readonly PushOutcomeEntry[]): Promise<void> => {
    try {
      await store.recordOutcomes(batch);
    } catch (err) {
      if (refusedValueReason(err) === undefined) throw err;
      if (batch.length === 1) {
        logger.warn({ err, pushId: batch[0]?.pushId, jobId: batch[0]?.jobId }, 'job status: PostgreSQL refuses this outcome (a value it cannot store): dropped');
        return;
      }
      const half = Math.ceil(batch.length / 2);
      await writeApart(batch.slice(0, half));
      await writeApart(batch.slice(half));
    }
  };
  const write = async (): Promise<void> => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    try {
      await writeApart(batch);
    } catch (err) {
      // Ahead of what was noted since, so a push's later outcome still wins.
      pending = [...batch, ...pending];
      const dropped = Math.max(0, pending.length - maxPending);
      if (dropped > 0) pending = pending.slice(dropped);
      logger.warn({ err, pushes: batch.length, kept: pending.length, dropped }, 'job status not recorded for these pushes yet: kept for the next flush');
    }
  };
  // One write at a time (batches, parks, the timer and the stop all flush): two at once, the older
  // batch refused and kept, or written after the newer, would let a push's older outcome win.
  let writing: Promise<void> = Promise.resolve();
  return {
    note(push, outcome, detail) {
      pending.push(outcomeEntry(push, outcome, detail));
    },
    noteEntry(entry) {
      pending.push(entry);
    },
    flush() {
      writing = writing.then(write);
      return writing;
    },
  };
}
