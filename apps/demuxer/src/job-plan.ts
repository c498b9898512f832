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
  /** Devices among them dead since an earlier fan-out of the job counted them (AudienceDevice.gone). */
  gone: ReadonlySet<string>;
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
 * A device that died since an earlier fan-out of the job counted it (`gone`, a retry's) gets no push
 * now: its push is recorded invalid, unsent. One due later is stored as before (the earlier pass
 * may have stored it; a pusher's claim finds the device dead when it falls due).
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
  const askedWhenDue = job.deliverAt !== undefined && !expired;
  const considered = askedWhenDue ? reachable : reachable.filter((d) => d.skipped === null);
  const pushes = devicePushesFor(job, considered, acceptedAt);
  const planned: ScheduleSplit = expired
    ? { now: [], later: [], expired: pushes, timezoneFallbacks: 0 }
    : splitBySchedule(job, pushes, considered, acceptedAt, now, slackMs);
  // Skipped now: those due now (or expiring first) are recorded so; those due later wait to be asked again.
  const skipped = new Map(reachable.flatMap((d) => (d.skipped === null ? [] : [[d.deviceId, d.skipped] as const])));
  const gone = new Set(reachable.flatMap((d) => (d.gone === true ? [d.deviceId] : [])));
  const stored = new Set(planned.later.map((l) => l.push.deviceId));
  const goes = (p: DevicePush) => !skipped.has(p.deviceId) && !gone.has(p.deviceId);
  const split: ScheduleSplit = { ...planned, now: planned.now.filter(goes), expired: planned.expired.filter(goes) };
  const outcomes: PushOutcomeEntry[] = reachable.flatMap((d) => (stored.has(d.deviceId) ? [] : notSentOutcome(job, d)));
  const expiredReason = expired ? 'the job expired before it was fanned out' : 'it would expire before its delivery time';
  outcomes.push(...split.expired.map((p) => expiredOutcome(p, expiredReason)));
  const emitted = split.now.length + split.later.length;
  // A retry whose devices died since is the fan-out its first pass recorded, with nothing left to send.
  const label = expired
    ? 'expired'
    : reachable.length === 0
      ? 'no-devices'
      : emitted > 0 || gone.size > 0
        ? 'fanned-out'
        : skipped.size === reachable.length
          ? 'skipped'
          : 'expired';
  return { split, outcomes, noDevice, targeted: reachable.length + noDevice, reachable, gone, label };
}

/** What a device that gets no push now is recorded as: dead since an earlier pass (invalid), or skipped for its user's preferences. */
function notSentOutcome(job: PushJob, d: AudienceDevice): PushOutcomeEntry[] {
  if (d.gone !== true && d.skipped === null) return [];
  const push = { pushId: derivePushId(job.id, d.deviceId), jobId: job.id, platform: d.platform, deviceId: d.deviceId };
  if (d.gone === true) return [{ ...push, outcome: 'invalid', code: 'invalidated', reason: 'the token was invalidated or unregistered after the job was accepted' }];
  return d.skipped === null ? [] : [{ ...push, outcome: d.skipped, code: d.skipped, reason: skipReason(job, d.skipped) }];
}

function expiredOutcome(push: DevicePush, reason: string): PushOutcomeEntry {
  return { pushId: push.pushId, jobId: push.jobId, outcome: 'expired', reason, platform: push.platform, deviceId: push.deviceId };
}
