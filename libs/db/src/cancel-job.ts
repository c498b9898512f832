import type { Database } from './database.ts';
import { createFanoutRepository } from './fanout-repository.ts';

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
}

/**
 * Cancel a job: mark it cancelled (its running fan-out stops before its next chunk, and the
 * pushers drop its pushes still queued, recorded as cancelled) and remove every stored scheduled
 * push of the job (a store of its pushes in progress holds the mark back until it commits, and a
 * store after it records them cancelled instead, so the removal misses none; a job still in
 * push.jobs has its pushes recorded cancelled by the demuxer). Pushes a provider already accepted
 * are not recalled.
 */
export async function cancelJobFully(db: Pick<Database, 'scheduled' | 'kysely'>, jobId: string): Promise<JobCancellation> {
  const { known, fanout } = await createFanoutRepository(db.kysely).cancel(jobId);
  return { known, fanout, scheduled: await db.scheduled.cancelJob(jobId) };
}

/** cancelJobFully, answering how many scheduled pushes were removed. */
export const cancelJob = async (db: Pick<Database, 'scheduled' | 'kysely'>, jobId: string): Promise<number> => (await cancelJobFully(db, jobId)).scheduled;
