import type { JobPush, JobStatus } from '@herald/contracts';
import { toJobPushList, toJobStatus, type Database } from '@herald/db';
import { printable } from '../output.ts';

export interface FollowOptions {
  /** Give up after this long (the job may still be in flight; `herald` prints what it saw). */
  timeoutMs: number;
  pollMs?: number;
  write(line: string): void;
}

/** One line a push, printable (a reason can carry what a provider answered: output.ts). */
const describePush = (p: JobPush): string =>
  printable([`push ${p.pushId}`, p.platform ?? '?', p.token ?? '', p.outcome, p.code ?? '', p.reason ?? '', p.providerMessageId ?? ''].filter((s) => s !== '').join('  '));

/**
 * Nothing left to watch: parked, or nothing in flight but scheduled pushes, once the job has made
 * every push. An audience job reads targeted 0, in flight 0 while its fan-out begins (and nothing
 * in flight between its chunks): followed until its fan-out is done, not ended there.
 */
const settled = (s: JobStatus): boolean => s.state !== 'expanding' && (s.jobParked !== null || (s.inFlight !== null && s.inFlight - s.scheduled <= 0));

const summary = (s: JobStatus): string =>
  `job ${s.id}: targeted ${s.targeted ?? '?'}, delivered ${s.delivered}, invalid ${s.invalid}, failed ${s.failed}, parked ${s.parked}, ` +
  `skipped ${Object.values(s.skipped).reduce((a, b) => a + b, 0)}, scheduled ${s.scheduled}, in flight ${s.inFlight ?? '?'}`;

/**
 * `herald send --trace`: follow a job where the command runs. Prints the demuxer's outcome and
 * each device push's outcome as it is recorded (the same records as GET /v1/jobs/:id and
 * /pushes), then a summary once nothing is in flight but scheduled pushes, or at the timeout.
 * Returns the last status (undefined if the job was never seen).
 */
export async function followJob(db: Database, jobId: string, o: FollowOptions): Promise<JobStatus | undefined> {
  const seen = new Map<string, string>();
  // Monotonic and not cut to whole milliseconds: a wall clock stepped meanwhile, or read at a
  // millisecond boundary, ended the wait early (799.9 ms of an 800 ms wait).
  const deadline = performance.now() + o.timeoutMs;
  let demux: string | null = null;
  let last: JobStatus | undefined;
  for (;;) {
    const record = await db.jobs.status(jobId);
    if (record !== undefined) {
      last = toJobStatus(record);
      if (last.demuxOutcome !== demux && last.demuxOutcome !== null) o.write(`demuxer: ${last.demuxOutcome}${last.jobParked?.reason != null ? ` (${last.jobParked.reason})` : ''}`);
      demux = last.demuxOutcome;
      for (const p of toJobPushList(await db.jobs.pushes(jobId, { limit: 1000 }), 1000).pushes) {
        const line = describePush(p);
        if (seen.get(p.pushId) !== line) o.write(line);
        seen.set(p.pushId, line);
      }
      if (settled(last)) break;
    }
    if (performance.now() >= deadline) {
      o.write(`still in flight after ${o.timeoutMs} ms: GET /v1/jobs/${jobId} (and /pushes) shows the rest`);
      break;
    }
    await new Promise((r) => setTimeout(r, o.pollMs ?? 250));
  }
  if (last !== undefined) o.write(summary(last));
  return last;
}
