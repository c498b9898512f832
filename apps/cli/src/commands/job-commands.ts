import { DEFAULT_JOB_PUSHES_PAGE, JobPushesQuery, MAX_JOB_PUSHES_PAGE, isJobId, type JobPushList, type JobStatus } from '@herald/contracts';
import { cancelJobFully, toJobPushList, toJobStatus, type JobCancellation } from '@herald/db';
import type { Command } from 'commander';
import { auditedCli } from './cli-audit.ts';
import { withDatabase } from './with-database.ts';
import { printable, printObject } from '../output.ts';

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
  // A park reason can carry what a provider or a receiver answered: shown printable (output.ts).
  return `${lines.map(printable).join('\n')}\n`;
}

/**
 * `herald job pushes <id>`: one line a device push, what became of it and why (the same as GET
 * /v1/jobs/:id/pushes, which needs a team's key), and how to ask for the next page.
 */
export function describeJobPushes(jobId: string, list: JobPushList, page: { limit: number; after?: string }): string {
  const lines = list.pushes.map((p) => {
    const device = `${p.platform ?? '?'} device ${p.deviceId ?? '?'}${p.token === null ? '' : ` (${p.token})`}`;
    const why = [p.code, p.reason].filter((w) => w !== null).join(': ');
    const id = p.providerMessageId === null ? '' : ` [provider id ${p.providerMessageId}]`;
    const when = p.dueAt === null ? p.updatedAt : `due ${p.dueAt}`;
    return printable(`${p.pushId}  ${device}  ${p.outcome}${why === '' ? '' : ` (${why})`}${id}  ${when}`);
  });
  if (lines.length === 0) lines.push(page.after === undefined ? `job ${jobId}: no device push recorded (yet)` : `job ${jobId}: no more pushes after ${page.after}`);
  if (list.next !== null) lines.push(`more: herald job pushes ${jobId} --after ${list.next}${page.limit === DEFAULT_JOB_PUSHES_PAGE ? '' : ` --limit ${page.limit}`}`);
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
    .description("a job's status (herald job <id>), its device pushes and what became of each (herald job pushes <id>), or cancel it (herald job cancel <id>): stops its fan-out, drops its queued and scheduled pushes")
    .argument('<idOrAction>', 'a job id, or "pushes" or "cancel"')
    .argument('[id]', 'with pushes or cancel: the job id')
    .option('--json', 'print JSON')
    .option('--limit <n>', `with pushes: at most this many (up to ${MAX_JOB_PUSHES_PAGE})`, String(DEFAULT_JOB_PUSHES_PAGE))
    .option('--after <pushId>', "with pushes: the page after this push id (the last one's printed)")
    .action(async (first: string, second: string | undefined, o: { json?: boolean; limit: string; after?: string }) => {
      if (first === 'cancel' && second !== undefined) {
        const done = await cancelKnownJob(second);
        if (done === undefined) return;
        if (o.json === true) process.stdout.write(`${JSON.stringify({ id: second, ...done })}\n`);
        else if (done.alreadyDone) process.stdout.write(nothingToCancel(second));
        else process.stdout.write(`job ${second}: cancelled${done.fanout ? ' (its fan-out stopped)' : ''}; ${done.scheduled} scheduled push${done.scheduled === 1 ? '' : 'es'} removed\n`);
        return;
      }
      if (first === 'pushes' && second !== undefined) {
        await listJobPushes(second, o);
        return;
      }
      const record = await withDatabase((db) => db.jobs.status(first));
      if (record === undefined) {
        process.stderr.write(`no job "${first}"\n`);
        process.exitCode = 1;
        return;
      }
      const status = toJobStatus(record);
      if (o.json === true) printObject(status);
      else process.stdout.write(describeJobStatus(status));
    });
}

async function listJobPushes(jobId: string, o: { json?: boolean; limit: string; after?: string }): Promise<void> {
  // The API's own paging rules (GET /v1/jobs/:id/pushes), each refusal naming its flag.
  const page = JobPushesQuery.safeParse({ limit: o.limit, ...(o.after !== undefined && { after: o.after }) });
  if (!page.success) {
    const issue = page.error.issues[0];
    throw new Error(`--${String(issue?.path[0] ?? 'limit')}: ${issue?.message ?? 'invalid'} (got "${issue?.path[0] === 'after' ? o.after : o.limit}")`);
  }
  const { limit, after } = page.data;
  // The job looked up, not its status (which counts every push of it), as the API does.
  // An id no job could have names none (as the API answers it), not a database error.
  const found = isJobId(jobId) ? await withDatabase(async (db) => ((await db.jobs.get(jobId)) === undefined ? undefined : db.jobs.pushes(jobId, { limit, ...(after !== undefined && { after }) }))) : undefined;
  if (found === undefined) {
    process.stderr.write(`no job "${jobId}"\n`);
    process.exitCode = 1;
    return;
  }
  const list = toJobPushList(found, limit);
  if (o.json === true) printObject(list);
  else process.stdout.write(describeJobPushes(jobId, list, { limit, ...(after !== undefined && { after }) }));
}
