import { PushJob, decodeWith, isJobId, jobContentHash, jsonObjectOf } from '@herald/contracts';
import { JOB_ID_TAKEN, type FanoutRepository, type JobPark } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { ParkedNotice } from '@herald/messaging';
import type { DemuxerMetrics } from './demuxer-metrics.ts';

/** Runs a park's record write; one PostgreSQL refused is kept and tried again (createParkWrites). */
export type ParkWrite = (write: () => Promise<void>) => Promise<void>;

/** Writes a park's record once, as it comes (specs). */
export const writeOnce: ParkWrite = (write) => write();

/** Park records kept for another try while PostgreSQL refuses them (about 300 bytes each). */
export const MAX_KEPT_PARK_WRITES = 10_000;

/**
 * Park records the demuxer could not write (PostgreSQL refused: a failover) kept and tried again
 * every `intervalMs` and at stop, oldest first. The messaging lib acks a parked input once its
 * parked copy is confirmed, whatever the hook does: dropped, the job read expanding for good (never
 * pruned, for a fan-out). The writes are idempotent (an upsert, guarded updates), so one tried
 * again after the job moved on changes nothing. Past MAX_KEPT_PARK_WRITES the oldest go, with a warning.
 */
export function createParkWrites(logger: Logger, intervalMs = 5_000, max = MAX_KEPT_PARK_WRITES): { write: ParkWrite; stop(): Promise<void> } {
  let kept: Array<() => Promise<void>> = [];
  // A new one last; one a retry found still refused back in front, so the oldest go first.
  const keep = (write: () => Promise<void>, err: unknown, front: boolean): void => {
    kept = front ? [write, ...kept] : [...kept, write];
    const dropped = Math.max(0, kept.length - max);
    if (dropped > 0) kept = kept.slice(dropped);
    logger.warn({ err, kept: kept.length, dropped }, 'a parked message could not be recorded in its job status yet: kept for another try');
  };
  const retry = async (): Promise<void> => {
    for (let next = kept.shift(); next !== undefined; next = kept.shift()) {
      try {
        await next();
      } catch (err) {
        keep(next, err, true);
        return;
      }
    }
  };
  let retrying: Promise<void> = Promise.resolve();
  const timer = setInterval(() => void (retrying = retrying.then(retry)), intervalMs);
  timer.unref();
  return {
    async write(write) {
      try {
        await write();
      } catch (err) {
        keep(write, err, false);
      }
    },
    async stop() {
      clearInterval(timer);
      await (retrying = retrying.then(retry));
    },
  };
}

/**
 * The job a parked message carried, read leniently: a job that broke its contract but still names
 * its id and app is shown as parked in its status. Undefined when there is no job to show it on.
 */
export function parkedJobOf(body: Buffer): Pick<JobPark, 'id' | 'app' | 'contentHash' | 'acceptedAt'> | undefined {
  const value = jsonObjectOf(body);
  if (value === undefined) return undefined;
  const { id, app } = value;
  // Only what PostgreSQL can store: a NUL byte in the id refused the park write, which blocked every
  // later retried one. The app may be one no app has ("Demo"): jobs.app is plain text, and the park shows.
  const storableApp = typeof app === 'string' && app.length > 0 && app.length <= 200 && !app.includes('\u0000');
  if (typeof id !== 'string' || !isJobId(id) || !storableApp) return undefined;
  // A valid job's digest: its park is then not written onto another job's row given the same id.
  // Its own acceptance stamp, when it has one: the row shows when it was accepted, not parked.
  const job = decodeWith(PushJob, body);
  return {
    id,
    app,
    ...(job.ok && { contentHash: jobContentHash(job.value) }),
    ...(job.ok && job.value.acceptedAt !== undefined && { acceptedAt: new Date(job.value.acceptedAt) }),
  };
}

/**
 * push.fanout's onParked: a parked chunk task stops its fan-out (no later chunk is read until it is
 * replayed), so the job shows `parked: <code>` with the chunk and the reason, not expanding forever.
 */
export function recordParkedFanoutTasks(fanouts: Pick<FanoutRepository, 'recordPark'>, write: ParkWrite = writeOnce): (notice: ParkedNotice) => Promise<void> {
  return async ({ message, code, reason }) => {
    const { jobId, chunk } = jsonObjectOf(message.body) ?? {};
    // A task naming no job and chunk (never one Herald wrote) has no fan-out to mark.
    if (typeof jobId !== 'string' || !isJobId(jobId) || !Number.isSafeInteger(chunk)) return;
    await write(() => fanouts.recordPark(jobId, chunk as number, code, `chunk ${chunk as number}: ${reason}`));
  };
}

/** Park codes of a job whose id is another job's: its jobs row is that job's, not this one's to mark. */
const ID_OF_ANOTHER: ReadonlySet<string> = new Set(Object.keys(JOB_ID_TAKEN));

/**
 * push.jobs' onParked: every job the messaging lib parks (the demuxer's own parks, a retry that
 * ran out, the delivery limit) is shown in its status as `parked: <code>` with the reason; one
 * parked because its id is another job's is not (that job's status stays as it is).
 */
export function recordParkedJobs(
  jobs: {
    recordJobParks(entries: readonly JobPark[]): Promise<void>;
  },
  write: ParkWrite = writeOnce,
): (notice: ParkedNotice) => Promise<void> {
  return async ({ message, code, reason }) => {
    const job = parkedJobOf(message.body);
    if (job !== undefined && !ID_OF_ANOTHER.has(code)) await write(() => jobs.recordJobParks([{ ...job, code, reason }]));
  };
}

/**
 * Counts each job the push.jobs consumer parks, once it is parked: the demuxer's own parks, a retry
 * that ran out and the delivery limit alike (counted where the demuxer decided, those two were
 * never in herald_demuxer_jobs_total{outcome="parked"}). `app` is the job's only for a valid job
 * of an app there is ("" else: arbitrary text published over AMQP makes no series).
 */
export function countParkedJobs(metrics: Pick<DemuxerMetrics, 'jobs'>, apps: { get(id: string): Promise<unknown> }): (notice: ParkedNotice) => Promise<void> {
  return async ({ message, code }) => {
    const job = code === 'unknown-app' ? undefined : decodeWith(PushJob, message.body);
    // Only an app there is: a valid job naming none, parked for a retry run out, makes no series.
    const app = job?.ok === true && (await apps.get(job.value.app).catch(() => undefined)) !== undefined ? job.value.app : '';
    metrics.jobs.inc({ outcome: 'parked', app });
  };
}

/** Counts each fan-out chunk task the push.fanout consumer parks, once it is parked (its own parks and a retry run out alike). */
export function countParkedChunks(metrics: Pick<DemuxerMetrics, 'fanoutChunks'>): () => void {
  return () => metrics.fanoutChunks.inc({ outcome: 'parked' });
}

/** A consumer's onParked that counts the park, then records it. */
export const countedThen =
  (count: (notice: ParkedNotice) => void | Promise<void>, record: (notice: ParkedNotice) => Promise<void>) =>
  async (notice: ParkedNotice): Promise<void> => {
    await count(notice);
    await record(notice);
  };

