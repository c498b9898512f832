import { DateTime, IANAZone } from 'luxon';

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
  // The next calendar day, counted in UTC where no day has a gap: today.plus({ days: 1 }) keeps the
  // time of day, which in America/Nuuk on the eve of its spring change (23:00 → 00:00 on the Saturday)
  // does not exist and became Sunday, a day skipped.
  const tomorrow = DateTime.utc(today.year, today.month, today.day).plus({ days: 1 });
  return candidates.find((c) => c.getTime() >= from.getTime()) ?? wallClockToInstant(on(tomorrow), zone);
}

/**
 * Whether the zone is an IANA name ("Asia/Kolkata"), as the doors judge it (contracts' timeZoneProblem
 * agrees with IANAZone.isValidZone). Not luxon's setZone, which also takes "local" and "system" (the
 * server's own zone) and fixed offsets such as "UTC+3": a zone stored before the doors checked it
 * read so was not counted as a fallback, and gave the server's local time.
 */
export function isKnownZone(zone: string): boolean {
  // isValidZone builds an Intl.DateTimeFormat a call; a wave asks for the same few hundred zones a million times.
  let known = knownZones.get(zone);
  if (known === undefined) {
    known = IANAZone.isValidZone(zone);
    if (knownZones.size < MAX_ZONES_REMEMBERED) knownZones.set(zone, known);
  }
  return known;
}

/** IANA has about 600 names; what devices report beyond that (typos) is judged again each time. */
const MAX_ZONES_REMEMBERED = 2_000;
const knownZones = new Map<string, boolean>();
