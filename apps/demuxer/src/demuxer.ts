import { PushJob, acceptedAtOf, decodeWith, expiresBeforeDue, jobContentHash, jobExpiry, scheduleProblem, targetUsers, type DevicePush } from '@herald/contracts';
import { jobIdTaken, type AppRow, type Audience, type CancelledPush, type DemuxEntry, type DemuxRecorded, type TargetRequest } from '@herald/db';
import type { Logger } from '@herald/logging';
import { handledBefore, type InboundMessage, type Outcome, type Publisher } from '@herald/messaging';
import { appConformanceIssues, jobConformanceIssues, jobNotices, webConformanceIssues, type ConformanceIssue } from '@herald/providers';
import type { DemuxerMetrics } from './demuxer-metrics.ts';
import { publishSliced } from './fan-out.ts';
import { planJob, type JobPlan } from './job-plan.ts';
import { scheduleLater, type SchedulingDeps } from './schedule-later.ts';
import { startAudienceJob, type AudienceStartDeps } from './audience-start.ts';
import { parkJob as park } from './job-park.ts';

export interface DemuxerDeps {
  targets: {
    /** Every active device of the requests' users, each with why it is skipped (opt-out, mute) or null. */
    findAudience(requests: readonly TargetRequest[], now: Date): Promise<Audience>;
  };
  apps: { get(id: string): Promise<AppRow | undefined> };
  publisher: Publisher;
  /** Where jobs with deliverAt keep their future pushes. */
  scheduling: SchedulingDeps;
  metrics: DemuxerMetrics;
  logger: Logger;
  /**
   * Job status (GET /v1/jobs/:id): what each job targeted and the outcomes decided here, written
   * before its pushes are published so no push's outcome is ever counted against an unknown total.
   * Parked jobs are recorded by the consumer's onParked (job-parks.ts). recordDemux answers which
   * jobs were cancelled while they waited in push.jobs: their pushes go to recordCancelled instead
   * of the send queues or the store; and which jobs' ids another job holds (another app's, or
   * other content: a publisher reusing an id): those are parked, nothing of them sent or stored.
   */
  jobs?: {
    recordDemux(entries: readonly DemuxEntry[]): Promise<DemuxRecorded>;
    recordCancelled(pushes: readonly CancelledPush[]): Promise<void>;
  };
  /** Audience jobs are handed to the fan-out stage (audience-start.ts, fanout-chunk.ts). */
  audiences?: Pick<AudienceStartDeps, 'fanouts' | 'audiences'>;
  /** Device pushes per RabbitMQ message to a send queue (PUSH_PACK_SIZE, ADR 0016); default 1. */
  packMax?: number;
  /** Target users a part of a batch holds (DEMUXER_BATCH_USERS); unset: the whole batch is one part. */
  partUsers?: number;
  /** Most device pushes published (serialised, sent, confirmed) at once; default PUBLISH_SLICE (fan-out.ts). */
  publishSlice?: number;
  now?: () => Date;
}


/**
 * `webChecked`: held to Web Push's rules at admission already (the app has VAPID keys of its own).
 * `again`: its message may have been handled before (handledBefore), so the job may have been fanned
 * out; or a fan-out recorded its job before (recordDemux's fannedOutBefore: a copy published again).
 */
type Accepted = { index: number; job: PushJob; acceptedAt: Date; expired: boolean; webChecked: boolean; again: boolean; contentHash: Buffer };
const ack: Outcome = { kind: 'ack' };
const NOTHING_RECORDED: DemuxRecorded = { cancelled: new Set(), taken: new Map(), fannedOutBefore: new Set() };

/**
 * Job → one DevicePush per valid device of each target user. A batch of jobs costs one
 * targeting query and one status write per part (at most `partUsers` target users, or one job),
 * and the input is acked only after every emitted push is confirmed (or stored, for later).
 */
export function createDemuxerHandler(deps: DemuxerDeps) {
  const now = deps.now ?? (() => new Date());
  return async (messages: readonly InboundMessage[]): Promise<Outcome[]> => {
    const outcomes: Outcome[] = messages.map(() => ack);
    const accepted: Accepted[] = [];
    for (const [index, message] of messages.entries()) {
      const checked = await admit(message, deps, now());
      if ('kind' in checked) outcomes[index] = checked;
      else if (checked.job.audience !== undefined) outcomes[index] = await startAudience(checked, deps);
      else accepted.push({ index, ...checked, contentHash: jobContentHash(checked.job) });
    }
    // One part at a time: the pushes a batch holds at once follow its users, not its job count
    // (a hundred jobs of 10,000 users each would otherwise be two million pushes in memory).
    for (const part of partsOf(accepted, deps.partUsers ?? Number.POSITIVE_INFINITY)) {
      for (const [index, parked] of await demuxPart(part, deps, now())) outcomes[index] = parked;
    }
    return outcomes;
  };
}

/**
 * Consecutive jobs whose target users add up to at most `maxUsers`; a job with more is a part
 * alone. A job whose id a job of the part holds with another app or content starts the next part,
 * whose record (recordDemux) then finds the id taken: copies of one job share a part, as before.
 */
function partsOf(accepted: readonly Accepted[], maxUsers: number): Accepted[][] {
  const parts: Accepted[][] = [];
  let users = 0;
  let ids = new Map<string, Accepted>();
  for (const a of accepted) {
    const n = targetUsers(a.job).length;
    const last = parts.at(-1);
    const copy = ids.get(a.job.id);
    const another = copy !== undefined && jobIdTaken(a.job.id, { app: a.job.app, contentHash: a.contentHash }, { app: copy.job.app, contentHash: copy.contentHash }) !== undefined;
    if (last === undefined || users + n > maxUsers || another) {
      ids = new Map();
      parts.push([a]);
      users = n;
    } else {
      last.push(a);
      users += n;
    }
    if (!ids.has(a.job.id)) ids.set(a.job.id, a);
  }
  return parts;
}

/** Targets, records and publishes one part; answers the jobs it parked instead (by batch index). */
async function demuxPart(part: readonly Accepted[], deps: DemuxerDeps, at: Date): Promise<Map<number, Outcome>> {
  const audience = await deps.targets.findAudience(
    part.map(({ index, job, again }) => ({
      key: String(index),
      app: job.app,
      userIds: targetUsers(job),
      category: job.category,
      ...(job.objectId !== undefined && { objectId: job.objectId }),
      // A fan-out that recorded the job and failed before publishing counted devices dead since (findAudience).
      ...(again && { jobId: job.id }),
    })),
    at,
  );
  const parked = new Map<number, Outcome>();
  const planned = part.flatMap((a) => {
    const plan = planJob(a.job, a.acceptedAt, audience.get(String(a.index)) ?? [], a.expired, at, deps.scheduling.slackMs);
    const outcome = webParkOf(a, plan, deps, at);
    if (outcome !== undefined) parked.set(a.index, outcome);
    return outcome === undefined ? [{ a, plan }] : [];
  });
  const { cancelled, taken, fannedOutBefore } = (await deps.jobs?.recordDemux(planned.map(({ a, plan }) => demuxEntry(a, plan, audience.readAs?.get(String(a.index)))))) ?? NOTHING_RECORDED;
  // A copy read as a first pass of a job an earlier fan-out recorded (published again over AMQP):
  // read again as that fan-out's retry, so a device whose token was replaced in between is
  // addressed as that fan-out did (the same push, sent once), not by its new token (a second one).
  const rereads = (a: Accepted): boolean => !a.again && fannedOutBefore.has(a.job.id);
  const readAgain = planned.filter(({ a }) => rereads(a)).map(({ a }) => ({ ...a, again: true }));
  const own = planned.filter(({ a }) => {
    const why = taken.get(a.job.id);
    if (why !== undefined) parked.set(a.index, park(deps, why.code, why.reason, a.job));
    return why === undefined && !rereads(a);
  });
  const accepted = own.map(({ a }) => a);
  const plans = own.map(({ plan }) => plan);
  if (cancelled.size > 0) await recordCancelled(accepted, plans, cancelled, deps);
  const emitted = await Promise.all(accepted.map((a, i) => (cancelled.has(a.job.id) ? [] : fanOut(a, plans[i] as JobPlan, deps, at))));
  // Every job's pushes of this part together, so pushes of many small jobs share RabbitMQ messages.
  await publishSliced(deps.publisher, emitted.flat(), deps.packMax ?? 1, deps.publishSlice);
  accepted.forEach((a, i) => emittedLog(a.job, emitted[i] ?? [], deps));
  if (readAgain.length > 0) for (const [index, outcome] of await demuxPart(readAgain, deps, at)) parked.set(index, outcome);
  return parked;
}

/**
 * Web Push's rules for a job of an app without VAPID keys of its own, once its plan is known:
 * when it sends or stores a push for a browser (signed with the web-pusher's own pair), a job its
 * pushes would break is parked whole, before anything is recorded or sent, as a job breaking APNs'
 * or FCM's rules is at admission; otherwise each of its web pushes would be parked at the
 * web-pusher. A browser skipped now (its user opted out or muted) counts only for a scheduled job,
 * whose plan stores it to be asked again when due.
 */
function webParkOf(a: Accepted, plan: JobPlan, deps: DemuxerDeps, at: Date): Outcome | undefined {
  const toBrowser = (p: DevicePush) => p.platform === 'web';
  if (a.webChecked || !(plan.split.now.some(toBrowser) || plan.split.later.some((l) => toBrowser(l.push)))) return undefined;
  const issues = webConformanceIssues(a.job, at);
  return issues.length === 0 ? undefined : parkForRules(deps, issues, a.job);
}

function parkForRules(deps: DemuxerDeps, issues: readonly ConformanceIssue[], job: PushJob): Outcome {
  const reason = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
  return park(deps, /payload too large|Web Push: payload is \d+ bytes/.test(reason) ? 'payload-too-large' : 'provider-rules', reason, job);
}

/**
 * Jobs cancelled while they waited in push.jobs (DELETE /v1/jobs/:id found the row the HTTP API
 * wrote): each push the job would have published or stored is recorded `cancelled`, so the job's
 * status adds up and nothing of it waits as scheduled; nothing is published, stored or counted in
 * the wave monitor. Outcomes decided in the plan (opted-out, muted, expired) stand as recorded.
 */
async function recordCancelled(accepted: readonly Accepted[], plans: readonly JobPlan[], cancelled: ReadonlySet<string>, deps: DemuxerDeps): Promise<void> {
  const pushes: CancelledPush[] = [];
  for (const [i, { job }] of accepted.entries()) {
    const plan = plans[i];
    if (!cancelled.has(job.id) || plan === undefined) continue;
    const dropped = [...plan.split.now, ...plan.split.later.map((l) => l.push)];
    pushes.push(...dropped.map((p) => ({ pushId: p.pushId, jobId: p.jobId, deviceId: p.deviceId, platform: p.platform })));
    deps.metrics.jobs.inc({ outcome: 'cancelled', app: job.app });
    deps.logger.info({ jobId: job.id, pushes: dropped.length }, 'job was cancelled before the demuxer took it: its pushes recorded cancelled, none sent or stored');
  }
  await deps.jobs?.recordCancelled(pushes);
}

function demuxEntry({ job, acceptedAt, contentHash, again }: Accepted, plan: JobPlan, readAs: string | undefined): DemuxEntry {
  return {
    again,
    ...(readAs !== undefined && { readAs }),
    id: job.id,
    app: job.app,
    contentHash,
    acceptedAt,
    targeted: plan.targeted,
    outcome: plan.label,
    notices: jobNotices(job, acceptedAt),
    noDevice: plan.noDevice,
    pushes: plan.outcomes,
    ...(plan.dead.length > 0 && { dead: plan.dead }),
  };
}

/** Validate one job; returns a final outcome, or the job to target. */
async function admit(message: InboundMessage, deps: DemuxerDeps, at: Date): Promise<Outcome | Omit<Accepted, 'index' | 'contentHash'>> {
  const parsed = decodeWith(PushJob, message.body);
  if (!parsed.ok) return park(deps, parsed.reason.startsWith('malformed') ? 'malformed-json' : 'schema', parsed.reason);
  const job = parsed.value;
  const app = await deps.apps.get(job.app);
  if (app === undefined) return park(deps, 'unknown-app', `unknown app "${job.app}"`, job);
  if (!app.enabled) return park(deps, 'app-disabled', `app "${job.app}" is disabled`, job);
  const badSchedule = scheduleProblem(job.deliverAt, at, deps.scheduling.horizonDays);
  if (badSchedule !== undefined) return park(deps, 'bad-schedule', badSchedule, job);
  // Apple's and Google's rules (and Web Push's when the app has VAPID keys; otherwise once the
  // targets show a browser, webParkOf), as at the API: a job they would refuse is parked, never sent.
  const webChecked = app.webVapid === true;
  const issues = jobConformanceIssues(job, { web: webChecked }, at);
  if (issues.length > 0) return parkForRules(deps, issues, job);
  const appIssues = appConformanceIssues(job, app);
  if (appIssues.length > 0) return parkForRules(deps, appIssues, job);
  const acceptedAt = acceptedAtOf(job, at);
  // As the doors refuse it (a job published over raw AMQP passed none of them).
  const expires = expiresBeforeDue(job, acceptedAt);
  if (expires !== undefined) return park(deps, 'bad-schedule', `${expires.path}: ${expires.message}`, job);
  const expiry = jobExpiry(job, acceptedAt);
  // An expired job is still targeted: its status counts each push it would have made as expired.
  const expired = expiry !== undefined && expiry <= at;
  if (expired) deps.logger.info({ jobId: job.id, expiresAt: expiry.toISOString() }, 'job expired before fan-out: dropped');
  if (job.trace === true) deps.logger.info({ jobId: job.id, trace: true, attempt: message.attempt }, 'trace: demuxer accepted job');
  return { job, acceptedAt, expired, webChecked, again: handledBefore(message) };
}

/** The job's pushes to send now (later ones are stored here); publishing is the caller's, for the whole batch. */
async function fanOut(a: Accepted, plan: JobPlan, deps: DemuxerDeps, at: Date): Promise<DevicePush[]> {
  const { job } = a;
  deps.metrics.jobs.inc({ outcome: plan.label, app: job.app });
  const pushes = job.deliverAt === undefined || a.expired ? plan.split.now : await scheduleLater(job, plan.split, deps, at);
  if (plan.label !== 'fanned-out') {
    // Counted, and shown in the job's status; logged at info only when traced.
    deps.logger[job.trace === true ? 'info' : 'debug']({ jobId: job.id, users: targetUsers(job).length, outcome: plan.label }, 'job has nothing to send');
    return [];
  }
  return pushes;
}

function emittedLog(job: PushJob, pushes: readonly DevicePush[], deps: DemuxerDeps): void {
  for (const p of pushes) deps.metrics.devicePushes.inc({ platform: p.platform });
  if (job.trace === true && pushes.length > 0) {
    deps.logger.info({ jobId: job.id, trace: true, pushIds: pushes.map((p) => p.pushId) }, 'trace: demuxer emitted device pushes');
  }
}

/** An audience job starts its chunked fan-out; an expired one too (its status counts each push as expired). */
function startAudience({ job, acceptedAt }: Pick<Accepted, 'job' | 'acceptedAt'>, deps: DemuxerDeps): Promise<Outcome> | Outcome {
  if (deps.audiences === undefined) return park(deps, 'schema', 'this demuxer does not expand audiences', job);
  return startAudienceJob(job, acceptedAt, { ...deps.audiences, publisher: deps.publisher, metrics: deps.metrics, logger: deps.logger });
}

