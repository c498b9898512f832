import type { DevicePush } from '@herald/contracts';
import type { Logger } from '@herald/logging';

/** A device push's final outcome as a job's status counts it. */
export type JobOutcome = 'delivered' | 'invalid' | 'expired' | 'parked';

export interface JobOutcomeRecorder {
  /** Remember an outcome; written by the next flush. */
  note(push: DevicePush, outcome: JobOutcome): void;
  /** Write what was noted (one statement). Never throws: job status is advisory, delivery is not held up. */
  flush(): Promise<void>;
}

export function createJobOutcomeRecorder(
  store: { recordOutcomes(entries: ReadonlyArray<{ pushId: string; jobId: string; outcome: string }>): Promise<void> },
  logger: Logger,
): JobOutcomeRecorder {
  let pending: Array<{ pushId: string; jobId: string; outcome: string }> = [];
  return {
    note(push, outcome) {
      pending.push({ pushId: push.pushId, jobId: push.jobId, outcome });
    },
    async flush() {
      if (pending.length === 0) return;
      const batch = pending;
      pending = [];
      try {
        await store.recordOutcomes(batch);
      } catch (err) {
        logger.warn({ err, pushes: batch.length }, 'job status not recorded for these pushes');
      }
    },
  };
}
