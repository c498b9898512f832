import { DateTime } from 'luxon';

export interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
}

const offsetMinutesAt = (ms: number, zone: string): number => DateTime.fromMillis(ms, { zone }).offset;

/**
 * The instant a wall-clock time happens in an IANA zone, with Temporal's "compatible" rules:
 * a time skipped by a DST gap moves forward by the gap's length (02:30 → 03:30), and a time
 * that happens twice in a DST overlap takes its first occurrence.
 */
export function wallClockToInstant(wall: WallClock, zone: string): Date {
  const naive = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute);
  // The offsets in force a day either side cover every transition that can touch this time.
  const before = offsetMinutesAt(naive - 86_400_000, zone);
  const after = offsetMinutesAt(naive + 86_400_000, zone);
  const candidates = [...new Set([before, after])]
    .map((offset) => naive - offset * 60_000)
    .filter((ms) => offsetMinutesAt(ms, zone) * 60_000 === naive - ms)
    .sort((a, b) => a - b);
  const first = candidates[0];
  // No candidate: the time is in a gap; read it with the offset from before the gap.
  return new Date(first ?? naive - before * 60_000);
}

/** Whether luxon knows the zone (an IANA name such as "Asia/Kolkata"). */
export const isKnownZone = (zone: string): boolean => DateTime.now().setZone(zone).isValid;
