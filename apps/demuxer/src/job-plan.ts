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
  /** The devices addressed: those the job's push type reaches (an audience chunk records them). */
  reachable: AudienceDevice[];
  /**
   * Pushes to devices dead since an earlier fan-out of the job counted them (AudienceDevice.gone, a
   * retry's): recorded invalid where the push has no outcome yet, and neither sent nor stored.
   */
  dead: PushOutcomeEntry[];
  /** The job's demuxOutcome. */
  label: 'fanned-out' | 'no-devices' | 'skipped' | 'expired';
}

const skipReason = (job: PushJob, why: SkipReason): string =>
  why === 'opted-out' ? `the user opted out of category "${job.category}"` : `the user muted "${job.objectId ?? ''}"`;

/**
 * One job's fan-out: the reachable devices of its users (by push type), those skipped for opt-outs
 * and mutes, users without any, and, for a scheduled job, each push's due time. `expired`: the
 * job expired before fan-out, so each push it would have made is recorded as expired instead.
 *
 * A scheduled job's push to a device skipped now is stored all the same when it is due later: the
 * user's opt-outs and mutes are asked again when it falls due (the deschedulers' claim), so a mute
 * that ends before then does not cost the push, and one made meanwhile still holds it back.
 *
 * A device that died since an earlier fan-out of the job counted it (`gone`, a retry's) counts as
 * addressed, its user as reached, and gets no push: its push is `dead`. The rest is planned from
 * the live devices, as for a first pass.
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
  const { live, dead } = deadSince(job, reachable);
  const askedWhenDue = job.deliverAt !== undefined && !expired;
  const considered = askedWhenDue ? live : live.filter((d) => d.skipped === null);
  const pushes = devicePushesFor(job, considered, acceptedAt, now);
  const planned: ScheduleSplit = expired
    ? { now: [], later: [], expired: pushes, timezoneFallbacks: 0 }
    : splitBySchedule(job, pushes, considered, acceptedAt, now, slackMs);
  // Skipped now: those due now (or expiring first) are recorded so; those due later wait to be asked again.
  const skipped = new Map(live.flatMap((d) => (d.skipped === null ? [] : [[d.deviceId, d.skipped] as const])));
  const stored = new Set(planned.later.map((l) => l.push.deviceId));
  const split: ScheduleSplit = {
    ...planned,
    now: planned.now.filter((p) => !skipped.has(p.deviceId)),
    expired: planned.expired.filter((p) => !skipped.has(p.deviceId)),
  };
  const outcomes: PushOutcomeEntry[] = live.flatMap((d) =>
    d.skipped === null || stored.has(d.deviceId)
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
  const expiredReason = expired ? 'the job expired before it was fanned out' : 'it would expire before its delivery time';
  outcomes.push(...split.expired.map((p) => expiredOutcome(p, expiredReason)));
  const emitted = split.now.length + split.later.length;
  // A retry that finds devices dead since is the fan-out an earlier pass recorded, whatever is left to send.
  const label = expired
    ? 'expired'
    : reachable.length === 0
      ? 'no-devices'
      : dead.length > 0
        ? 'fanned-out'
        : emitted === 0 && skipped.size === live.length
          ? 'skipped'
          : emitted === 0
            ? 'expired'
            : 'fanned-out';
  return { split, outcomes, noDevice, targeted: reachable.length + noDevice, reachable, dead, label };
}

/** The devices still alive, and the pushes of those dead since an earlier pass (AudienceDevice.gone) as invalid outcomes. */
function deadSince(job: PushJob, reachable: AudienceDevice[]): { live: AudienceDevice[]; dead: PushOutcomeEntry[] } {
  if (!reachable.some((d) => d.gone === true)) return { live: reachable, dead: [] };
  const dead = reachable
    .filter((d) => d.gone === true)
    .map((d): PushOutcomeEntry => ({
      pushId: derivePushId(job.id, d.deviceId),
      jobId: job.id,
      outcome: 'invalid',
      code: 'invalidated',
      reason: 'the token was invalidated or unregistered after an earlier fan-out of the job counted it',
      platform: d.platform,
      deviceId: d.deviceId,
    }));
  return { live: reachable.filter((d) => d.gone !== true), dead };
}

function expiredOutcome(push: DevicePush, reason: string): PushOutcomeEntry {
  return { pushId: push.pushId, jobId: push.jobId, outcome: 'expired', reason, platform: push.platform, deviceId: push.deviceId };
}
