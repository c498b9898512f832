import type { Database } from './database.ts';

/**
 * Cancel a job's scheduled pushes before they are due: removes every stored push of the job
 * and returns how many were removed. Pushes already released to the send queues are not recalled.
 */
export const cancelJob = (db: Pick<Database, 'scheduled'>, jobId: string): Promise<number> => db.scheduled.cancelJob(jobId);
