import { jsonObjectOf } from '@herald/contracts';
import type { FanoutRepository, JobPark } from '@herald/db';
import type { ParkedNotice } from '@herald/messaging';

/**
 * The job a parked message carried, read leniently: a job that broke its contract but still names
 * its id and app is shown as parked in its status. Undefined when there is no job to show it on.
 */
export function parkedJobOf(body: Buffer): Pick<JobPark, 'id' | 'app'> | undefined {
  const value = jsonObjectOf(body);
  if (value === undefined) return undefined;
  const { id, app } = value;
  const named = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 200;
  return named(id) && named(app) ? { id, app } : undefined;
}

/**
 * push.fanout's onParked: a parked chunk task stops its fan-out (no later chunk is read until it is
 * replayed), so the job shows `parked: <code>` with the chunk and the reason, not expanding forever.
 */
export function recordParkedFanoutTasks(fanouts: Pick<FanoutRepository, 'recordPark'>): (notice: ParkedNotice) => Promise<void> {
  return async ({ message, code, reason }) => {
    const { jobId, chunk } = jsonObjectOf(message.body) ?? {};
    // A task naming no job and chunk (never one Herald wrote) has no fan-out to mark.
    if (typeof jobId !== 'string' || jobId.length === 0 || !Number.isSafeInteger(chunk)) return;
    await fanouts.recordPark(jobId, chunk as number, code, `chunk ${chunk as number}: ${reason}`);
  };
}

/**
 * push.jobs' onParked: every job the messaging lib parks (the demuxer's own parks, a retry that
 * ran out, the delivery limit) is shown in its status as `parked: <code>` with the reason.
 */
export function recordParkedJobs(jobs: {
  recordJobParks(entries: readonly JobPark[]): Promise<void>;
}): (notice: ParkedNotice) => Promise<void> {
  return async ({ message, code, reason }) => {
    const job = parkedJobOf(message.body);
    if (job !== undefined) await jobs.recordJobParks([{ ...job, code, reason }]);
  };
}
