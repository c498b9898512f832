import { appConformanceIssues, entryConformanceIssues, jobConformanceIssues, jobNotices, webConformanceIssues, type ConformanceIssue } from '@herald/providers';
import { JobBatch, JobPushesQuery, MAX_BATCH_JOBS, PushJob, acceptedAtOf, isJobId, jobContentHash, expiredWhenAccepted, expiresBeforeDue, newJobIssues, scheduleProblem, type JobAccepted, type JobPushList, type JobStatus } from '@herald/contracts';
import type { AcceptResult, ApiKeyRow, AppRow, JobIdRecord, JobRecord, JobStatusRecord, PushRecord } from '@herald/db';
import { ApiError, fieldError, parseBody } from './api-error.ts';
import { requireApp } from './auth.ts';
import { JOB_ID_TAKEN, toJobPushList, toJobStatus } from '@herald/db';
import { BrokerUnavailableError, PublishNotSentError, UnroutableError } from '@herald/messaging';
import type { PublishTimings } from './request-metrics.ts';

export interface JobServiceDeps {
  jobs: {
    accept(jobs: readonly JobIdRecord[]): Promise<Map<string, AcceptResult>>;
    /**
     * Note confirmed jobs as published. May return before that is recorded: a repost in between
     * publishes the job again, which is harmless (its pushIds are deduplicated by the pushers).
     */
    markPublished(jobs: readonly JobIdRecord[]): void;
    forget(ids: readonly string[]): Promise<void>;
    /** The ids among these published before for the same app with the same content (JobRepository.publishedBefore). */
    publishedBefore(jobs: readonly JobIdRecord[]): Promise<ReadonlySet<string>>;
    get(id: string): Promise<JobRecord | undefined>;
    status(id: string): Promise<JobStatusRecord | undefined>;
    /** A status kept for the job (job-records.ts) is read afresh next time. */
    forgetStatus?(id: string): void;
    pushes(id: string, page: { limit: number; after?: string }): Promise<PushRecord[]>;
  };
  apps: { get(id: string): Promise<AppRow | undefined> };
  /** Whether the app has a valid Web Push subscription (appHasWebDevices, cached per app). */
  webDevices: { get(app: string): Promise<boolean> };
  /** Resolves once RabbitMQ confirmed the job (the client library's publishPushJob). */
  publish(job: PushJob): Promise<unknown>;
  cancel(jobId: string): Promise<number>;
  /** Why an audience job cannot be expanded (an unknown topic: 404 naming it), or undefined. */
  audienceProblem?(app: string, audience: NonNullable<PushJob['audience']>): Promise<string | undefined>;
  scheduleHorizonDays?: number;
  now?: () => Date;
}

/**
 * 403 / 422 unless the key may use the app and the app exists and is enabled (or, with
 * `disabledToo`, disabled: a register or unregister goes through whatever the app's state); the app.
 */
export async function checkApp(deps: Pick<JobServiceDeps, 'apps'>, key: ApiKeyRow, id: string, disabledToo = false, path = 'app'): Promise<AppRow> {
  requireApp(key, id, path);
  const app = await deps.apps.get(id);
  if (app === undefined) throw fieldError(422, 'unknown-app', path, `unknown app "${id}"`);
  if (!app.enabled && !disabledToo) throw fieldError(422, 'app-disabled', path, `app "${id}" is disabled`);
  return app;
}

/** A field of job `i`: `field` in a single job's body (prefix ''), `jobs.i.field` in a batch's. */
const jobField = (prefix: string, i: number, field: string): string => (prefix === '' ? field : `${prefix}${i}.${field}`);

/** The path of the first job (of a batch, `jobs.N.app`) that names `app`. */
const appPathOf = (jobs: readonly PushJob[], app: string, prefix: string): string => jobField(prefix, jobs.findIndex((j) => j.app === app), 'app');

function validateJobs(raw: unknown, acceptedAt: string): PushJob[] {
  if (raw instanceof ValidatedJobs) return raw.jobs;
  const items = (raw as { jobs?: unknown } | null)?.jobs;
  if (Array.isArray(items) && items.length > MAX_BATCH_JOBS) {
    throw new ApiError(400, 'batch-too-large', `a batch may carry at most ${MAX_BATCH_JOBS} jobs, this one has ${items.length}`, [
      { path: 'jobs', message: `at most ${MAX_BATCH_JOBS} jobs` },
    ]);
  }
  const stamped = Array.isArray(items) ? { ...(raw as object), jobs: items.map((j: unknown) => stamp(j, acceptedAt)) } : raw;
  const { jobs } = parseBody(JobBatch, stamped);
  const seen = new Map<string, number>();
  jobs.forEach((job, i) => {
    const first = seen.get(job.id);
    if (first !== undefined) throw new ApiError(400, 'invalid-request', `jobs.${i}.id: repeats jobs.${first}.id`, [{ path: `jobs.${i}.id`, message: `repeats jobs.${first}.id` }]);
    seen.set(job.id, i);
  });
  return jobs;
}

/**
 * Why a job could deliver nothing for its expiry, as of its acceptance: expired when accepted (beyond
 * the allowance for clocks apart), or before it is due. As the demuxer will read it: the caller's
 * acceptedAt stands when it gave one (never later than now).
 */
function expiryProblem(job: PushJob, acceptedAt: Date): { path: string; message: string } | undefined {
  const accepted = acceptedAtOf(job, acceptedAt);
  return expiredWhenAccepted(job, accepted) ?? expiresBeforeDue(job, accepted);
}

/**
 * Beyond the contract: a job that can deliver something (400 naming the field). Time decides it (an
 * expiry before acceptance, or before the job is due), so it is checked with what may have changed
 * since a repost's first acceptance (checkTargets), and only for a job not published before
 * (`publishedBefore`): a retry of a job accepted just in time, its answer lost, or of a batch a 503
 * confirmed in part, is the duplicate it is, not "nothing would be delivered" while its pushes go out.
 */
function checkJob(job: PushJob, acceptedAt: Date, prefix: string, publishedBefore: boolean): void {
  const expires = publishedBefore ? undefined : expiryProblem(job, acceptedAt);
  if (expires !== undefined) throw new ApiError(400, 'invalid-request', `${prefix}${expires.path}: ${expires.message}`, [{ path: `${prefix}${expires.path}`, message: expires.message }]);
  // Rules for a new job only (newJobIssues): a repost of one accepted before them is its duplicate.
  const issues = newJobIssues(job).map((i) => ({ path: `${prefix}${i.path}`, message: i.message }));
  if (issues.length > 0) throw new ApiError(400, 'invalid-request', issues.map((i) => `${i.path}: ${i.message}`).join('; '), issues);
}

/**
 * Content Apple and Google accept, and Web Push too when the job's app may have browsers (400
 * naming the field). Checked once the apps are known. An app with VAPID keys of its own is held
 * to Web Push's rules, as one without them that has a web device all the same (the web-pusher
 * signs those with its own pair): otherwise the job would be accepted and each of its web pushes
 * parked. An app without browsers is not held to Web Push's smaller size limit.
 */
async function checkConformance(jobs: readonly PushJob[], apps: ReadonlyMap<string, AppRow>, acceptedAt: Date, prefix: string, deps: JobServiceDeps): Promise<void> {
  for (const [i, job] of jobs.entries()) {
    const at = prefix === '' ? '' : `${prefix}${i}.`;
    const app = apps.get(job.app);
    const ownKeys = app?.webVapid === true;
    let found: ConformanceIssue[] = jobConformanceIssues(job, { web: ownKeys }, acceptedAt);
    if (found.length === 0 && !ownKeys) {
      const web = webConformanceIssues(job, acceptedAt);
      if (web.length > 0 && (await deps.webDevices.get(job.app))) {
        found = web.map((issue) => ({ ...issue, message: `${issue.message}; app "${job.app}" has Web Push subscriptions` }));
      }
    }
    if (found.length === 0 && app !== undefined) found = appConformanceIssues(job, app);
    // A new job's only (entryConformanceIssues): under the published-before fallback, a repost of one accepted before is its duplicate.
    if (found.length === 0) found = entryConformanceIssues(job, acceptedAt);
    const issues = found.map((issue) => ({ path: `${at}${issue.path}`, message: issue.message }));
    if (issues.length > 0) throw new ApiError(400, 'invalid-request', issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '), issues);
  }
}

/** A schedule within the horizon Herald stores pushes for (400 naming the field): a setting, which may have changed since a repost's first acceptance. */
function checkHorizon(jobs: readonly PushJob[], acceptedAt: Date, prefix: string, deps: JobServiceDeps): void {
  for (const [i, job] of jobs.entries()) {
    const bad = scheduleProblem(job.deliverAt, acceptedAt, deps.scheduleHorizonDays);
    if (bad !== undefined) throw fieldError(400, 'invalid-request', jobField(prefix, i, 'deliverAt'), bad);
  }
}

/** A job to a topic the app does not have is refused with 404 naming the topic. */
async function checkAudiences(jobs: readonly PushJob[], deps: JobServiceDeps, prefix: string): Promise<void> {
  if (deps.audienceProblem === undefined) return;
  for (const [i, job] of jobs.entries()) {
    if (job.audience === undefined) continue;
    const problem = await deps.audienceProblem(job.app, job.audience);
    if (problem !== undefined) throw fieldError(404, 'unknown-topic', jobField(prefix, i, 'audience.topic'), problem);
  }
}

/** Jobs already validated (a single POST /v1/jobs), so they are not parsed twice. */
class ValidatedJobs {
  constructor(readonly jobs: PushJob[]) {}
}

const stamp = (job: unknown, acceptedAt: string): unknown =>
  typeof job === 'object' && job !== null && !Array.isArray(job) ? { acceptedAt, ...job } : job;

/**
 * A job id already taken by another app cannot be accepted for this one; nor one accepted before
 * with other content: published beside the first, each device would get whichever copy a pusher
 * claimed first (their pushIds are the same), and after the first's confirm the second was answered
 * as its duplicate without a word. Nor one cancelled since: answered as accepted (or a duplicate),
 * it was published again and every push recorded cancelled, nothing sent and nothing said. A retry
 * repeats the job; a new job takes a new id.
 */
function conflicts(jobs: readonly PushJob[], accepted: Map<string, AcceptResult>, prefix: string): ApiError | undefined {
  const existing = (j: PushJob) => {
    const r = accepted.get(j.id);
    return r?.kind === 'existing' ? r : undefined;
  };
  // Every job of a kind named, so a batch is mended in one round trip (the rest is published once they are left out).
  const refusal = (code: string, indexes: number[], message: (id: string) => string, what: string): ApiError | undefined => {
    if (indexes.length === 0) return undefined;
    const issues = indexes.map((i) => ({ path: jobField(prefix, i, 'id'), message: message(jobs[i]?.id ?? '') }));
    const first = issues[0] as { path: string; message: string };
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more ${what}${issues.length > 2 ? 's' : ''}: see issues)` : '';
    return new ApiError(409, code, `${first.path}: ${first.message}${more}`, issues);
  };
  const which = (test: (j: PushJob, r: NonNullable<ReturnType<typeof existing>>) => boolean): number[] =>
    jobs.flatMap((j, i) => {
      const r = existing(j);
      return r !== undefined && test(j, r) ? [i] : [];
    });
  return (
    refusal('job-id-conflict', which((j, r) => r.app !== j.app), JOB_ID_TAKEN['job-id-conflict'], "other app's job") ??
    refusal('job-cancelled', which((_j, r) => r.cancelled), (id) => `job id "${id}" was cancelled (DELETE /v1/jobs/:id) and is not sent again: a new job needs a new id`, 'cancelled job') ??
    refusal('job-id-reused', which((_j, r) => r.sameContent === false), JOB_ID_TAKEN['job-id-reused'], 'reused job id')
  );
}

/**
 * A publish refused before anything was sent: not connected, RabbitMQ blocking publishers, no queue
 * to route to. Not a call the confirm timeout left out of its round while it waited behind
 * unconfirmed ones (PublishNotSentError): nothing of that call went, but a repost of the same job
 * (a caller whose own timeout is shorter than API_PUBLISH_CONFIRM_TIMEOUT_MS) may have been handed
 * to the publisher behind it meanwhile, found recorded and unpublished, and be on its way; forget
 * works per id, not per call, so the id would be freed under it, its cancel answered 404 and a
 * corrected repost taken as a new job beside it. It is answered as not confirmed, its id kept.
 */
const unsent = (s: PromiseSettledResult<unknown> | undefined): boolean =>
  s?.status === 'rejected' &&
  !(s.reason instanceof PublishNotSentError) &&
  (s.reason instanceof BrokerUnavailableError || s.reason instanceof UnroutableError);

/** Why publishes failed, as the 503 says it: a call left out of its round (its own message says "not sent") is answered as not confirmed. */
const failure = (reason: Error | undefined): string =>
  reason instanceof PublishNotSentError
    ? 'not confirmed: RabbitMQ had not confirmed the publishes ahead of it within API_PUBLISH_CONFIRM_TIMEOUT_MS'
    : (reason?.message ?? 'unknown');

/**
 * Publish the jobs this request must publish and record the confirmed ones. One RabbitMQ did not
 * confirm keeps its record, unpublished: its message may still arrive (a confirm that timed out
 * after the send, a connection lost after it), so a DELETE /v1/jobs/:id after the 503 must find the job to
 * cancel, and a repost must repeat it as it was. A new one refused before it was sent is forgotten,
 * so the caller may correct it. A refusal names each job not confirmed (`issues`, by its path
 * among `all`, the request's jobs), so a caller whose retry is refused (its app disabled since,
 * say) knows which of them may not have gone out.
 */
async function publishAll(jobs: readonly PushJob[], all: readonly PushJob[], prefix: string, records: ReadonlyMap<string, JobIdRecord>, fresh: ReadonlySet<string>, deps: JobServiceDeps): Promise<void> {
  if (jobs.length === 0) return;
  const settled = await Promise.allSettled(jobs.map((j) => deps.publish(j)));
  const ok = jobs.filter((_, i) => settled[i]?.status === 'fulfilled').map((j) => records.get(j.id) as JobIdRecord);
  const failed = jobs.filter((_, i) => settled[i]?.status === 'rejected').map((j) => j.id);
  const forgotten = new Set(jobs.filter((j, i) => fresh.has(j.id) && unsent(settled[i])).map((j) => j.id));
  deps.jobs.markPublished(ok);
  await deps.jobs.forget([...forgotten]);
  if (failed.length > 0) {
    const reason = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')?.reason as Error | undefined;
    const index = new Map(all.map((j, i) => [j.id, i]));
    const pathOf = (id: string) => jobField(prefix, index.get(id) as number, 'id');
    const issues = failed.map((id) => ({
      path: pathOf(id),
      message: forgotten.has(id)
        ? `job "${id}" was not sent: nothing of it will arrive, and its id is free; repost it, corrected if need be`
        : `job "${id}" was not confirmed: it may still arrive; repost it as it was, or cancel it`,
    }));
    const listed = (ids: string[], what: string) => (ids.length === 0 ? [] : [`${what}: ${ids.map(pathOf).join(', ')}`]);
    const which = [...listed(failed.filter((id) => !forgotten.has(id)), 'not confirmed'), ...listed(failed.filter((id) => forgotten.has(id)), 'not sent')];
    throw new ApiError(
      503,
      'broker-unavailable',
      `${failed.length} of the request's ${all.length} jobs were not published (${failure(reason)}); retry: jobs already published are reported as duplicates; ${which.join('; ')}`,
      issues,
    );
  }
}

/**
 * Validate (the PushJob contract), authorise, record each id once, publish what is new and
 * return once RabbitMQ confirmed it. A job recorded earlier but never confirmed (a crash or a
 * failed publish) is published again: pushIds are deterministic, so downstream dedupes it.
 */
export async function acceptJobs(body: unknown, key: ApiKeyRow, deps: JobServiceDeps, timings: PublishTimings = {}): Promise<JobAccepted[]> {
  const acceptedAt = (deps.now?.() ?? new Date()).toISOString();
  const jobs = validateJobs(body, acceptedAt);
  const appIds = new Set(jobs.map((j) => j.app));
  const prefix = body instanceof ValidatedJobs ? '' : 'jobs.';
  for (const app of appIds) requireApp(key, app, appPathOf(jobs, app, prefix));
  const records = new Map(jobs.map((j): [string, JobIdRecord] => [j.id, { id: j.id, app: j.app, team: key.team, contentHash: jobContentHash(j) }]));
  try {
    await checkTargets(jobs, appIds, key, new Date(acceptedAt), prefix, records, deps);
  } catch (err) {
    // A retry of jobs accepted and published before (the answer was lost) is told so, whatever
    // changed since (the app disabled, a browser registered, the topic deleted): refused, its
    // publisher would take a job on its way for one never sent. A key without the app is refused above.
    if (!(err instanceof ApiError) || !(await allPublishedBefore([...records.values()], deps, timings))) throw err;
    // One cancelled since is refused as it would be had the check passed (409 job-cancelled naming
    // each), not answered as a duplicate on its way; the others are named as published by that
    // refusal's absence, as on the way in. Read without writing: every one of them is recorded.
    const cancelled = conflicts(jobs, await deps.jobs.accept([...records.values()]), prefix);
    if (cancelled !== undefined) throw cancelled;
    return answers(jobs, new Set(), acceptedAt);
  }
  const recording = performance.now();
  const accepted = await deps.jobs.accept([...records.values()]);
  timings.recordMs = performance.now() - recording;
  const conflict = conflicts(jobs, accepted, prefix);
  const fresh = new Set(jobs.filter((j) => accepted.get(j.id)?.kind === 'new').map((j) => j.id));
  if (conflict !== undefined) {
    await deps.jobs.forget([...fresh]);
    throw conflict;
  }
  const unpublished = jobs.filter((j) => {
    const r = accepted.get(j.id);
    return r?.kind === 'new' || (r?.kind === 'existing' && !r.published);
  });
  const confirming = performance.now();
  try {
    await publishAll(unpublished, jobs, prefix, records, fresh, deps);
  } finally {
    if (unpublished.length > 0) timings.confirmMs = performance.now() - confirming;
  }
  return answers(jobs, new Set(unpublished.map((j) => j.id)), acceptedAt);
}

/**
 * What may have changed since a job was first accepted: the clock (its expiry passed, or before its
 * due time), the scheduling horizon, its app (gone, disabled), the rules it is held to now, its topic.
 * A job published before is its duplicate whatever its expiry (publishedDespiteExpiry); for the rest,
 * a refusal is answered as a duplicate only when every job of the request was published before (acceptJobs).
 */
async function checkTargets(
  jobs: readonly PushJob[],
  appIds: ReadonlySet<string>,
  key: ApiKeyRow,
  acceptedAt: Date,
  prefix: string,
  records: ReadonlyMap<string, JobIdRecord>,
  deps: JobServiceDeps,
): Promise<void> {
  const published = await publishedDespiteExpiry(jobs, acceptedAt, records, deps);
  jobs.forEach((job, i) => checkJob(job, acceptedAt, prefix === '' ? '' : `${prefix}${i}.`, published.has(job.id)));
  checkHorizon(jobs, acceptedAt, prefix, deps);
  const apps = new Map<string, AppRow>();
  for (const app of appIds) apps.set(app, await checkApp(deps, key, app, false, appPathOf(jobs, app, prefix)));
  await checkConformance(jobs, apps, acceptedAt, prefix, deps);
  await checkAudiences(jobs, deps, prefix);
}

/**
 * Of the jobs whose expiry would refuse them now (expiryProblem), those published before for their
 * app with their content: answered as duplicates, whatever their expiry, so a batch a 503 confirmed
 * in part is retried (as the 503 says) after a published job's expiry too, its new jobs published and
 * the published one a duplicate, not the whole batch refused 400 for a job that went out in time.
 * Read only when a job has such an expiry.
 */
async function publishedDespiteExpiry(
  jobs: readonly PushJob[],
  acceptedAt: Date,
  records: ReadonlyMap<string, JobIdRecord>,
  deps: JobServiceDeps,
): Promise<ReadonlySet<string>> {
  const expiring = jobs.filter((j) => expiryProblem(j, acceptedAt) !== undefined);
  if (expiring.length === 0) return new Set();
  return deps.jobs.publishedBefore(expiring.map((j) => records.get(j.id) as JobIdRecord));
}

/**
 * Whether every one of these jobs was published before for its app with its content. The first
 * alone is looked up first: a refused post of new jobs (a sender that keeps posting to a disabled
 * app) costs one read of one row. Timed as the record stage (Server-Timing `record`).
 */
async function allPublishedBefore(records: readonly JobIdRecord[], deps: JobServiceDeps, timings: PublishTimings): Promise<boolean> {
  const reading = performance.now();
  try {
    const [first, ...rest] = records;
    if (first === undefined || (await deps.jobs.publishedBefore([first])).size === 0) return false;
    return (await deps.jobs.publishedBefore(rest)).size === rest.length;
  } finally {
    timings.recordMs = performance.now() - reading;
  }
}

/** Each job's answer: `published` holds those this request published, the others are duplicates. */
function answers(jobs: readonly PushJob[], published: ReadonlySet<string>, acceptedAt: string): JobAccepted[] {
  return jobs.map((j) => {
    const notices = jobNotices(j, new Date(acceptedAt));
    return { id: j.id, duplicate: !published.has(j.id), ...(notices.length > 0 && { notices }) };
  });
}

/** A single job is a batch of one: the same validation, paths without the `jobs.0.` prefix. */
export async function acceptJob(body: unknown, key: ApiKeyRow, deps: JobServiceDeps, timings?: PublishTimings): Promise<JobAccepted> {
  const acceptedAt = (deps.now?.() ?? new Date()).toISOString();
  const job = parseBody(PushJob, stamp(body, acceptedAt));
  const [result] = await acceptJobs(new ValidatedJobs([job]), key, deps, timings);
  return result as JobAccepted;
}

/** The job, if it exists and the key may see its app (otherwise 404: ids of other teams are not revealed). */
async function visibleJob(id: string, key: ApiKeyRow, deps: JobServiceDeps): Promise<JobRecord> {
  // An id no job can have (a NUL byte, which PostgreSQL cannot even compare) is not looked up.
  const job = isJobId(id) ? await deps.jobs.get(id) : undefined;
  if (job === undefined || !(key.apps.includes('*') || key.apps.includes(job.app))) throw new ApiError(404, 'unknown-job', `no job "${id}"`);
  return job;
}

export async function jobStatus(id: string, key: ApiKeyRow, deps: JobServiceDeps): Promise<JobStatus> {
  await visibleJob(id, key, deps);
  const s = await deps.jobs.status(id);
  if (s === undefined) throw new ApiError(404, 'unknown-job', `no job "${id}"`);
  return toJobStatus(s);
}

/** A page of the job's device pushes and what became of each (GET /v1/jobs/:id/pushes?limit=&after=). */
export async function jobPushes(id: string, query: unknown, key: ApiKeyRow, deps: JobServiceDeps): Promise<JobPushList> {
  const page = parseBody(JobPushesQuery, query);
  await visibleJob(id, key, deps);
  const rows = await deps.jobs.pushes(id, { limit: page.limit, ...(page.after !== undefined && { after: page.after }) });
  return toJobPushList(rows, page.limit);
}

/**
 * Cancel the job: a running audience fan-out stops before its next chunk, pushes still queued are
 * dropped by the pushers (outcome cancelled), and its scheduled pushes are removed (`cancelled`
 * counts those); a job still waiting for the demuxer has its pushes recorded cancelled when the
 * demuxer takes it, none sent or stored. Pushes a provider already accepted are not recalled.
 */
export async function cancelJob(id: string, key: ApiKeyRow, deps: JobServiceDeps): Promise<{ id: string; cancelled: number }> {
  await visibleJob(id, key, deps);
  try {
    return { id, cancelled: await deps.cancel(id) };
  } finally {
    deps.jobs.forgetStatus?.(id);
  }
}
