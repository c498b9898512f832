import type { JobStatus } from '@herald/contracts';
import { cancelJobFully, toJobStatus, type JobCancellation } from '@herald/db';
import type { Command } from 'commander';
import { auditedCli } from './cli-audit.ts';
import { withDatabase } from './with-database.ts';

/** `herald job <id>`: the job's state, audience progress and counts (the same as GET /v1/jobs/:id). */
export function describeJobStatus(s: JobStatus): string {
  const skipped = s.skipped;
  const lines = [
    `job ${s.id} (app ${s.app}): ${s.state ?? '?'}`,
    ...(s.audience == null
      ? []
      : [`audience: ${JSON.stringify(s.audience.target)}: size ${s.audience.size ?? '?'}${s.audience.sizeExact ? '' : ' (estimate)'}, expanded ${s.audience.expanded}, chunks ${s.audience.chunksDone}/${s.audience.chunks}`]),
    `targeted ${s.targeted ?? '?'}, sent ${s.delivered}, in flight ${s.inFlight ?? '?'} (scheduled ${s.scheduled})`,
    `skipped: opted out ${skipped.optedOut}, muted ${skipped.muted}, no device ${skipped.noDevice}, expired ${skipped.expired}, cancelled ${skipped.cancelled}`,
    `failed ${s.failed}, invalidated ${s.invalid}, parked ${s.parked}`,
    ...(s.jobParked === null ? [] : [`parked by the demuxer: ${s.jobParked.code}${s.jobParked.reason === null ? '' : ` (${s.jobParked.reason})`}`]),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Cancel the job, or say on stderr (exit code 1) that Herald does not have it yet: a job published
 * straight to RabbitMQ is known once the demuxer has taken it, and its pushes would go out all the
 * same. For `herald job cancel` and `herald cancel --job`. Audited (job.cancel) before it runs; the
 * result says whether Herald had the job and what was cancelled.
 */
export async function cancelKnownJob(jobId: string): Promise<JobCancellation | undefined> {
  const done = await auditedCli({ action: 'job.cancel', target: jobId, request: { via: 'cli' } }, (db) => cancelJobFully(db, jobId));
  if (done.known) return done;
  process.stderr.write(`no job "${jobId}" to cancel: Herald does not have it (not yet demuxed, or never published); nothing was cancelled\n`);
  process.exitCode = 1;
  return undefined;
}

/** What `herald job cancel` and `herald cancel --job` say of a job that was done with nothing parked. */
export const nothingToCancel = (jobId: string): string => `job ${jobId}: already done, nothing parked: nothing to cancel\n`;

/** `herald job <id>` and `herald job cancel <id>`. */
export function registerJobCommands(program: Command): void {
  program
    .command('job')
    .description("a job's status (herald job <id>), or cancel it (herald job cancel <id>): stops its fan-out, drops its queued and scheduled pushes")
    .argument('<idOrAction>', 'a job id, or "cancel"')
    .argument('[id]', 'with cancel: the job id')
    .option('--json', 'print JSON')
    .action(async (first: string, second: string | undefined, o: { json?: boolean }) => {
      if (first === 'cancel' && second !== undefined) {
        const done = await cancelKnownJob(second);
        if (done === undefined) return;
        if (o.json === true) process.stdout.write(`${JSON.stringify({ id: second, ...done })}\n`);
        else if (done.alreadyDone) process.stdout.write(nothingToCancel(second));
        else process.stdout.write(`job ${second}: cancelled${done.fanout ? ' (its fan-out stopped)' : ''}; ${done.scheduled} scheduled push${done.scheduled === 1 ? '' : 'es'} removed\n`);
        return;
      }
      const record = await withDatabase((db) => db.jobs.status(first));
      if (record === undefined) {
        process.stderr.write(`no job "${first}"\n`);
        process.exitCode = 1;
        return;
      }
      const status = toJobStatus(record);
      process.stdout.write(o.json === true ? `${JSON.stringify(status, null, 2)}\n` : describeJobStatus(status));
    });
}
