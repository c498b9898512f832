import { derivePushId, targetUsers, type DevicePush, type PushJob } from '@herald/contracts';
import type { AudienceDevice, PushOutcomeEntry, SkipReason } from '@herald/db';
import { devicePushesFor, reachableDevices } from './fan-out.ts';
import { splitBySchedule, type ScheduleSplit } from './schedule-split.ts';

/** What the demuxer does with one job, decided before anything is written or published. */
export interface JobPlan {
  /** Pushes to publish now, to store for later, and dropped as expiring before they are due. */
  split: ScheduleSplit;
  /** Outcomes decided here (devices skipped for preferences, expired pushes), recorded with the job. */
  outcomes: PushOutcomeEntry[];
  /** Target users with no device the job's push type can reach. */
  noDevice: number;
  /** Every device push addressed (sent, scheduled, skipped, expired) plus one per user without a device. */
  targeted: number;
  /** The job's demuxOutcome. */
  label: 'fanned-out' | 'no-devices' | 'skipped' | 'expired';
}

const skipReason = (job: PushJob, why: SkipReason): string =>
  why === 'opted-out' ? `the user opted out of category "${job.category}"` : `the user muted "${job.objectId ?? ''}"`;

/**
 * One job's fan-out: the reachable devices of its users (by push type), those skipped for opt-outs
 * and mutes, users without any, and, for a scheduled job, each push's due time. `expired`: the
 * job expired before fan-out, so each push it would have made is recorded as expired instead.
 */
export function planJob(
  job: PushJob,
  acceptedAt: Date,
  audience: readonly AudienceDevice[],
  expired: boolean,
  now: Date,
  slackMs: number,
): JobPlan {
  const reachable = reachableDevices(job, audience);
  const users = targetUsers(job);
  const reached = new Set(reachable.map((d) => d.userId));
  const noDevice = users.filter((u) => !reached.has(u)).length;
  const sendable = reachable.filter((d) => d.skipped === null);
  const outcomes: PushOutcomeEntry[] = reachable.flatMap((d) =>
    d.skipped === null
      ? []
      : [
          {
            pushId: derivePushId(job.id, d.deviceId),
            jobId: job.id,
            outcome: d.skipped,
            code: d.skipped,
            reason: skipReason(job, d.skipped),
            platform: d.platform,
            deviceId: d.deviceId,
          },
        ],
  );
  const pushes = devicePushesFor(job, sendable, acceptedAt);
  const split: ScheduleSplit = expired
    ? { now: [], later: [], expired: pushes, timezoneFallbacks: 0 }
    : splitBySchedule(job, pushes, sendable, acceptedAt, now, slackMs);
  const expiredReason = expired ? 'the job expired before it was fanned out' : 'it would expire before its delivery time';
  outcomes.push(...split.expired.map((p) => expiredOutcome(p, expiredReason)));
  const emitted = split.now.length + split.later.length;
  const label = expired
    ? 'expired'
    : reachable.length === 0
      ? 'no-devices'
      : sendable.length === 0
        ? 'skipped'
        : emitted === 0
          ? 'expired'
          : 'fanned-out';
  return { split, outcomes, noDevice, targeted: reachable.length + noDevice, label };
}

function expiredOutcome(push: DevicePush, reason: string): PushOutcomeEntry {
  return { pushId: push.pushId, jobId: push.jobId, outcome: 'expired', reason, platform: push.platform, deviceId: push.deviceId };
}
