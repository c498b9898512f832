import { parseIsoDuration, type DeliverAt } from '@herald/contracts';
import { DateTime } from 'luxon';
import { jitterOffsetMs } from './jitter.ts';
import { isKnownZone, nextWallClockInstant, wallClockToInstant } from './local-time.ts';

export interface ResolvedDelivery {
  dueAt: Date;
  /** The device's zone was missing or unknown, so the local time was read in UTC. */
  timezoneFallback: boolean;
}

/** The most a jitter window cut short at a push's expiry ends before it. */
const EXPIRY_MARGIN_MS = 60_000;

/**
 * When one device should receive a job's push. An instant is used as is. A local time is read
 * in the device's IANA zone (UTC when missing or unknown, flagged); with a date, on that day (a
 * time repeated by a DST overlap takes its first occurrence); without one, its first occurrence at
 * or after `from` (the demuxer gives when the job was accepted) on the day of `from` in the
 * device's zone (the second of an overlap when the first has passed), else the next day. Jitter
 * adds a deterministic per-(job, device) offset in [0, window), the window being the jitter cut
 * short to end a margin before `expiresAt` (the push's expiry) when it would run past it: every device whose
 * local time comes before the expiry gets an instant before it, and a replay the same one. A local time at or after the expiry keeps the
 * whole window (its push expires before it is due all the same).
 */
export function resolveDeliverAt(
  deliverAt: DeliverAt,
  timezone: string | null,
  jobId: string,
  deviceId: string,
  from: Date,
  expiresAt?: Date,
): ResolvedDelivery {
  if ('at' in deliverAt) return { dueAt: new Date(deliverAt.at), timezoneFallback: false };
  const known = timezone !== null && isKnownZone(timezone);
  const zone = known ? timezone : 'UTC';
  const [hour, minute] = deliverAt.localTime.split(':').map(Number) as [number, number];
  const day = deliverAt.date === undefined ? undefined : DateTime.fromISO(deliverAt.date, { zone });
  const base =
    day === undefined
      ? nextWallClockInstant(hour, minute, zone, from)
      : wallClockToInstant({ year: day.year, month: day.month, day: day.day, hour, minute }, zone);
  const jitterMs = deliverAt.jitter !== undefined ? (parseIsoDuration(deliverAt.jitter) ?? 0) : 0;
  const untilExpiry = expiresAt === undefined ? Infinity : expiresAt.getTime() - base.getTime();
  // Cut short, the window ends a margin before the expiry (a tenth of the time left, at most a
  // minute): a push due at its very end would reach the pusher, through the store and a queue,
  // after it expired, and be dropped.
  const windowMs = untilExpiry > 0 ? Math.min(jitterMs, untilExpiry - Math.min(EXPIRY_MARGIN_MS, untilExpiry / 10)) : jitterMs;
  return { dueAt: new Date(base.getTime() + jitterOffsetMs(jobId, deviceId, windowMs)), timezoneFallback: !known };
}
