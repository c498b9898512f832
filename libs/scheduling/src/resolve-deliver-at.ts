import { parseIsoDuration, type DeliverAt } from '@herald/contracts';
import { DateTime } from 'luxon';
import { jitterOffsetMs } from './jitter.ts';
import { isKnownZone, wallClockToInstant } from './local-time.ts';

export interface ResolvedDelivery {
  dueAt: Date;
  /** The device's zone was missing or unknown, so the local time was read in UTC. */
  timezoneFallback: boolean;
}

/**
 * When one device should receive a job's push. An instant is used as is. A local time is read
 * in the device's IANA zone (UTC when missing or unknown, flagged); without a date it means
 * the day of `from` (the demuxer gives when the job was accepted) if that time is still ahead of
 * `from` in the device's zone, else the next day. Jitter adds a deterministic per-(job, device)
 * offset in [0, window), the window being the jitter cut short to end at `expiresAt` (the push's
 * expiry) when it would run past it: every device whose local time comes before the expiry gets
 * an instant before it, and a replay the same one. A local time at or after the expiry keeps the
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
  const day = deliverAt.date !== undefined ? DateTime.fromISO(deliverAt.date, { zone }) : DateTime.fromJSDate(from, { zone }).startOf('day');
  const on = (d: DateTime): Date => wallClockToInstant({ year: d.year, month: d.month, day: d.day, hour, minute }, zone);
  let base = on(day);
  if (deliverAt.date === undefined && base.getTime() < from.getTime()) base = on(day.plus({ days: 1 }));
  const jitterMs = deliverAt.jitter !== undefined ? (parseIsoDuration(deliverAt.jitter) ?? 0) : 0;
  const untilExpiry = expiresAt === undefined ? Infinity : expiresAt.getTime() - base.getTime();
  const windowMs = untilExpiry > 0 ? Math.min(jitterMs, untilExpiry) : jitterMs;
  return { dueAt: new Date(base.getTime() + jitterOffsetMs(jobId, deviceId, windowMs)), timezoneFallback: !known };
}
