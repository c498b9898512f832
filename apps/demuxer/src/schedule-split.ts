import { expiryAfterDue, type DevicePush, type PushJob } from '@herald/contracts';
import type { TargetDevice } from '@herald/db';
import { resolveDeliverAt } from '@herald/scheduling';

export interface ScheduleSplit {
  /** Due within the slack: publish now. */
  now: DevicePush[];
  /** Due later: store until then. */
  later: Array<{ dueAt: Date; push: DevicePush }>;
  /** Would expire before they are due: dropped (and counted in their job's status). */
  expired: DevicePush[];
  /** Devices whose timezone was missing or unknown, so their local time was read in UTC. */
  timezoneFallbacks: number;
}

/**
 * Resolve a scheduled job's due time per device (pushes[i] belongs to devices[i]) and split
 * its pushes into due now, due later, and expiring before they are due. A local time without a
 * date is the next one after the job was accepted (`acceptedAt`), not after the demuxer took it:
 * a job accepted at 08:58 for 09:00 that waited in a backlog until 09:01 is due today, at once
 * (its devices whose jittered time is still ahead, then), not tomorrow; and its replay gives each
 * device the same instant. A jitter window running past the push's expiry is cut short to end at
 * it, so only a device whose local time itself comes at or after the expiry is dropped as expired.
 */
export function splitBySchedule(
  job: PushJob,
  pushes: readonly DevicePush[],
  devices: readonly TargetDevice[],
  acceptedAt: Date,
  now: Date,
  slackMs: number,
): ScheduleSplit {
  const split: ScheduleSplit = { now: [], later: [], expired: [], timezoneFallbacks: 0 };
  for (const [i, push] of pushes.entries()) {
    if (job.deliverAt === undefined) {
      split.now.push(push);
      continue;
    }
    const jobExpiry = push.expiresAt === undefined ? undefined : new Date(push.expiresAt);
    const { dueAt, timezoneFallback } = resolveDeliverAt(job.deliverAt, devices[i]?.timezone ?? null, job.id, push.deviceId, acceptedAt, jobExpiry);
    if (timezoneFallback) split.timezoneFallbacks++;
    // deliverAt.expiresAfter: this push's own expiry, that long after its due time, if earlier than the job's.
    const expiresAt = expiryAfterDue(job.deliverAt, dueAt, jobExpiry);
    const own = expiresAt === jobExpiry ? push : { ...push, expiresAt: expiresAt?.toISOString() };
    if (expiresAt !== undefined && expiresAt.getTime() <= Math.max(dueAt.getTime(), now.getTime())) split.expired.push(own);
    else {
      // Stamped when it falls due after acceptance: the pushers' latency and a Live Activity's timestamp count from it.
      const due = dueAt.getTime() > acceptedAt.getTime() ? { ...own, dueAt: dueAt.toISOString() } : own;
      if (dueAt.getTime() <= now.getTime() + slackMs) split.now.push(due);
      else split.later.push({ dueAt, push: due });
    }
  }
  return split;
}
