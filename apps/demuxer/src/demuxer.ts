import { PushJob, decodeWith, jobExpiry, scheduleProblem, targetUsers } from '@herald/contracts';
import type { AppRow, TargetDevice } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { InboundMessage, Outcome, Publisher } from '@herald/messaging';
import { jobConformanceIssues, jobNotices } from '@herald/providers';
import type { DemuxerMetrics } from './demuxer-metrics.ts';
import { devicePushesFor, reachableDevices, toSendMessage } from './fan-out.ts';
import { scheduleLater, type SchedulingDeps } from './schedule-later.ts';

export interface DemuxerDeps {
  targets: {
    findTargets(
      requests: ReadonlyArray<{ key: string; app: string; userIds: readonly string[]; category: string; objectId?: string }>,
      now: Date,
    ): Promise<Map<string, TargetDevice[]>>;
  };
  apps: { get(id: string): Promise<AppRow | undefined> };
  publisher: Publisher;
  /** Where jobs with deliverAt keep their future pushes. */
  scheduling: SchedulingDeps;
  metrics: DemuxerMetrics;
  logger: Logger;
  /** Job status: how many device pushes each job targeted (read by the HTTP API's GET /v1/jobs/:id). */
  jobs?: { recordDemux(entries: ReadonlyArray<{ id: string; app: string; targeted: number; outcome: string }>): Promise<void> };
  now?: () => Date;
}

type Accepted = { index: number; job: PushJob; acceptedAt: Date };
const ack: Outcome = { kind: 'ack' };

/**
 * Job → one DevicePush per valid device of each target user. A batch of jobs costs one
 * targeting query, and the input is acked only after every emitted push is confirmed.
 */
export function createDemuxerHandler(deps: DemuxerDeps) {
  const now = deps.now ?? (() => new Date());
  return async (messages: readonly InboundMessage[]): Promise<Outcome[]> => {
    const outcomes: Outcome[] = messages.map(() => ack);
    const accepted: Accepted[] = [];
    for (const [index, message] of messages.entries()) {
      const checked = await admit(message, deps, now());
      if ('kind' in checked) outcomes[index] = checked;
      else accepted.push({ index, ...checked });
    }
    if (accepted.length === 0) return outcomes;
    const targets = await deps.targets.findTargets(
      accepted.map(({ index, job }) => ({
        key: String(index),
        app: job.app,
        userIds: targetUsers(job),
        category: job.category,
        ...(job.objectId !== undefined && { objectId: job.objectId }),
      })),
      now(),
    );
    for (const a of accepted) targets.set(String(a.index), reachableDevices(a.job, targets.get(String(a.index)) ?? []));
    const publishing = accepted.map((a) => fanOut(a, targets.get(String(a.index)) ?? [], deps, now()).then((o) => (outcomes[a.index] = o)));
    await Promise.all(publishing);
    await recordDemux(accepted, targets, outcomes, deps);
    return outcomes;
  };
}

/** Best effort: job status is advisory and must not hold up (or fail) delivery. */
async function recordDemux(accepted: Accepted[], targets: Map<string, TargetDevice[]>, outcomes: Outcome[], deps: DemuxerDeps): Promise<void> {
  if (deps.jobs === undefined) return;
  const entries = accepted.map(({ index, job, acceptedAt }) => {
    const outcome = outcomes[index];
    const targeted = (targets.get(String(index)) ?? []).length;
    const label = outcome?.kind === 'park' ? `parked: ${outcome.code}` : targeted === 0 ? 'no-devices' : 'fanned-out';
    return { id: job.id, app: job.app, targeted: outcome?.kind === 'park' ? 0 : targeted, outcome: label, notices: jobNotices(job, acceptedAt) };
  });
  try {
    await deps.jobs.recordDemux(entries);
  } catch (err) {
    deps.logger.warn({ err, jobs: entries.length }, 'job status not recorded for these jobs');
  }
}

/** Validate one job; returns a final outcome, or the job to target. */
async function admit(message: InboundMessage, deps: DemuxerDeps, at: Date): Promise<Outcome | Omit<Accepted, 'index'>> {
  const parsed = decodeWith(PushJob, message.body);
  if (!parsed.ok) return park(deps, parsed.reason.startsWith('malformed') ? 'malformed-json' : 'schema', parsed.reason);
  const job = parsed.value;
  const badSchedule = scheduleProblem(job.deliverAt, at, deps.scheduling.horizonDays);
  if (badSchedule !== undefined) return park(deps, 'bad-schedule', badSchedule, job);
  const app = await deps.apps.get(job.app);
  if (app === undefined) return park(deps, 'unknown-app', `unknown app "${job.app}"`, job);
  if (!app.enabled) return park(deps, 'app-disabled', `app "${job.app}" is disabled`, job);
  // Apple's and Google's rules, as at every door: a job they would refuse is parked, never sent.
  const issues = jobConformanceIssues(job, at);
  if (issues.length > 0) {
    const reason = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
    return park(deps, /payload too large/.test(reason) ? 'payload-too-large' : 'provider-rules', reason, job);
  }
  const acceptedAt = job.acceptedAt !== undefined ? new Date(job.acceptedAt) : at;
  const expiry = jobExpiry(job, acceptedAt);
  if (expiry !== undefined && expiry <= at) {
    deps.metrics.jobs.inc({ outcome: 'expired' });
    deps.logger.info({ jobId: job.id, expiresAt: expiry.toISOString() }, 'job expired before fan-out: dropped');
    return ack;
  }
  if (job.trace === true) deps.logger.info({ jobId: job.id, trace: true, attempt: message.attempt }, 'trace: demuxer accepted job');
  return { job, acceptedAt };
}

async function fanOut(a: Accepted, devices: readonly TargetDevice[], deps: DemuxerDeps, at: Date): Promise<Outcome> {
  const { job } = a;
  if (devices.length === 0) {
    deps.metrics.jobs.inc({ outcome: 'no-devices' });
    // Counted, and shown in the job's status; logged at info only when traced.
    deps.logger[job.trace === true ? 'info' : 'debug']({ jobId: job.id, users: targetUsers(job).length }, 'job has no deliverable devices');
    return ack;
  }
  const all = devicePushesFor(job, devices, a.acceptedAt);
  const pushes = job.deliverAt === undefined ? all : await scheduleLater(job, all, devices, deps, at);
  await deps.publisher.publishMany(pushes.map(toSendMessage));
  for (const p of pushes) deps.metrics.devicePushes.inc({ platform: p.platform });
  deps.metrics.jobs.inc({ outcome: 'fanned-out' });
  if (job.trace === true) {
    deps.logger.info({ jobId: job.id, trace: true, pushIds: pushes.map((p) => p.pushId) }, 'trace: demuxer emitted device pushes');
  }
  return ack;
}

function park(deps: DemuxerDeps, code: string, reason: string, job?: PushJob): Outcome {
  deps.metrics.jobs.inc({ outcome: 'parked' });
  deps.logger.warn({ jobId: job?.id, code, reason }, 'job parked');
  return { kind: 'park', code, reason };
}
