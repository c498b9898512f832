import { DateTime } from 'luxon';

export interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
}

const offsetMinutesAt = (ms: number, zone: string): number => DateTime.fromMillis(ms, { zone }).offset;

/** Every instant a wall-clock time happens in an IANA zone, earliest first: two in a DST overlap, none in a gap. */
export function wallClockOccurrences(wall: WallClock, zone: string): Date[] {
  const naive = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute);
  // The offsets in force a day either side cover every transition that can touch this time.
  const offsets = new Set([offsetMinutesAt(naive - 86_400_000, zone), offsetMinutesAt(naive + 86_400_000, zone)]);
  return [...offsets]
    .map((offset) => naive - offset * 60_000)
    .filter((ms) => offsetMinutesAt(ms, zone) * 60_000 === naive - ms)
    .sort((a, b) => a - b)
    .map((ms) => new Date(ms));
}

/**
 * The instant a wall-clock time happens in an IANA zone, with Temporal's "compatible" rules:
 * a time skipped by a DST gap moves forward by the gap's length (02:30 → 03:30), and a time
 * that happens twice in a DST overlap takes its first occurrence.
 */
export function wallClockToInstant(wall: WallClock, zone: string): Date {
  const [first] = wallClockOccurrences(wall, zone);
  if (first !== undefined) return first;
  // In a gap: read the time with the offset from before the gap.
  const naive = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute);
  return new Date(naive - offsetMinutesAt(naive - 86_400_000, zone) * 60_000);
}

/**
 * The first time a wall-clock time (hour, minute) happens in an IANA zone at or after `from`: on
 * the day of `from` in that zone when it is still ahead, else the next day. In a DST overlap that
 * is the second occurrence when `from` is past the first; a time in a gap is moved forward as
 * wallClockToInstant moves it, and is today's when that instant is still ahead.
 */
export function nextWallClockInstant(hour: number, minute: number, zone: string, from: Date): Date {
  const today = DateTime.fromJSDate(from, { zone });
  const on = (d: DateTime): WallClock => ({ year: d.year, month: d.month, day: d.day, hour, minute });
  const occurrences = wallClockOccurrences(on(today), zone);
  const candidates = occurrences.length > 0 ? occurrences : [wallClockToInstant(on(today), zone)];
  return candidates.find((c) => c.getTime() >= from.getTime()) ?? wallClockToInstant(on(today.plus({ days: 1 })), zone);
}

/** Whether luxon knows the zone (an IANA name such as "Asia/Kolkata"). */
export const isKnownZone = (zone: string): boolean => DateTime.now().setZone(zone).isValid;
