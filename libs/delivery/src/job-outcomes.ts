import type { DevicePush } from '@herald/contracts';
import type { PushOutcomeEntry } from '@herald/db';
import type { Logger } from '@herald/logging';

/** A device push's final outcome as the pusher decides it (parks reach the status through park-outcomes.ts). */
export type JobOutcome = 'delivered' | 'invalid' | 'expired' | 'cancelled';

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

export function createJobOutcomeRecorder(store: JobOutcomeStore, logger: Logger): JobOutcomeRecorder {
  let pending: PushOutcomeEntry[] = [];
  return {
    note(push, outcome, detail) {
      pending.push(outcomeEntry(push, outcome, detail));
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
