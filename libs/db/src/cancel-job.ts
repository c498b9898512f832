import type { Database } from './database.ts';
import { createFanoutRepository } from './fanout-repository.ts';
import { toJobStatus } from './job-status-view.ts';

export interface JobCancellation {
  /**
   * Herald has the job: accepted by the HTTP API, demuxed, or an audience job started. When it does
   * not (published straight to RabbitMQ and not yet demuxed, or never published), nothing is
   * cancelled: its pushes would still go out.
   */
  known: boolean;
  /** Scheduled pushes removed before they were due. */
  scheduled: number;
  /** A running audience fan-out was stopped. */
  fanout: boolean;
  /** The job was done with nothing parked: nothing was left to cancel, and it stays done. */
  alreadyDone: boolean;
}

/**
 * Cancel a job: mark it cancelled (its running fan-out stops before its next chunk, the pushes of
 * its chunks planned and not done are recorded cancelled where they have no outcome, as a parked
 * chunk task would never come back to do it, and the pushers drop its pushes still queued,
 * recorded as cancelled) and remove every stored scheduled
 * push of the job (a store of its pushes in progress holds the mark back until it commits, and a
 * store after it records them cancelled instead, so the removal misses none; a job still in
 * push.jobs has its pushes recorded cancelled by the demuxer). Pushes a provider already accepted
 * are not recalled.
 */
export async function cancelJobFully(db: Pick<Database, 'scheduled' | 'kysely' | 'jobs'>, jobId: string): Promise<JobCancellation> {
  // A job done with nothing parked has nothing left to cancel and stays done (marked, it read
  // "cancelled" though every push was delivered). One with parked or failed pushes, or parked
  // itself, is marked all the same: an operator's replay of the parked queue would send what was
  // cancelled.
  const record = await db.jobs.status(jobId);
  const status = record === undefined ? undefined : toJobStatus(record);
  // `failed` pushes (provider-rejected) wait in the parked queue too, for a replay --force.
  if (status?.state === 'done' && status.parked === 0 && status.failed === 0 && status.jobParked === null) return { known: true, fanout: false, scheduled: 0, alreadyDone: true };
  const { known, fanout } = await createFanoutRepository(db.kysely).cancel(jobId);
  return { known, fanout, scheduled: await db.scheduled.cancelJob(jobId), alreadyDone: false };
}

/** cancelJobFully, answering how many scheduled pushes were removed. */
export const cancelJob = async (db: Pick<Database, 'scheduled' | 'kysely' | 'jobs'>, jobId: string): Promise<number> => (await cancelJobFully(db, jobId)).scheduled;
