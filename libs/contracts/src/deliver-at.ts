import { z } from 'zod';
import { Instant } from './instant.ts';

/** Longest jitter window a job may ask for. */
export const MAX_JITTER_MS = 24 * 3600 * 1000;
/** How far ahead a job may be scheduled unless the caller configures a different horizon. */
export const DEFAULT_SCHEDULE_HORIZON_DAYS = 366;

const DURATION = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/**
 * Milliseconds in an ISO-8601 duration made of days, hours, minutes and seconds ("PT30M",
 * "PT1H30M", "P1D"), or undefined when it is malformed (years, months and weeks are not
 * accepted: their length depends on the calendar).
 */
export function parseIsoDuration(text: string): number | undefined {
  const m = DURATION.exec(text);
  if (m === null || text === 'P' || text.endsWith('T')) return undefined;
  const [d, h, min, s] = [m[1], m[2], m[3], m[4]].map((v) => (v === undefined ? 0 : Number(v))) as [number, number, number, number];
  return Math.round(((d * 24 + h) * 60 + min) * 60_000 + s * 1000);
}

const LocalTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a local time HH:mm between 00:00 and 23:59');
const Jitter = z.string().refine((v) => {
  const ms = parseIsoDuration(v);
  return ms !== undefined && ms <= MAX_JITTER_MS;
}, 'must be an ISO-8601 duration of at most 24 hours, e.g. "PT30M"');

/** Longest a job may let each push go after its due time (deliverAt.expiresAfter): what the providers store at most. */
export const MAX_EXPIRES_AFTER_MS = 28 * 24 * 3600 * 1000;
const ExpiresAfter = z
  .string()
  .refine((v) => {
    const ms = parseIsoDuration(v);
    return ms !== undefined && ms >= 60_000 && ms <= MAX_EXPIRES_AFTER_MS;
  }, 'must be an ISO-8601 duration of at least a minute and at most 28 days, e.g. "PT2H"')
  .describe(
    "each push expires this long after its own due time (its device's local time, jitter included), or at the job's expiresAt / ttl if that is earlier: a push that could not go by then (an outage, a backlog) is dropped as expired instead of arriving hours late, and a provider stores it no longer",
  );

/**
 * When to deliver: an absolute instant, or a wall-clock time in each device's own timezone
 * (optionally on a given local date, optionally spread over a jitter window after that time).
 */
export const DeliverAt = z.union([
  z.strictObject({ at: Instant, expiresAfter: ExpiresAfter.optional() }),
  z.strictObject({
    localTime: LocalTime,
    /** The local date; without it, today if the time is still ahead (a DST overlap's second occurrence counts), otherwise tomorrow. */
    date: z.iso.date().optional(),
    /** Each device gets a deterministic offset in [0, jitter) after localTime, the window cut short to end a little before the push's expiry. */
    jitter: Jitter.optional(),
    expiresAfter: ExpiresAfter.optional(),
  }),
]);

/** deliverAt.expiresAfter in milliseconds, or undefined without one. */
export const expiresAfterMs = (deliverAt: DeliverAt): number | undefined => (deliverAt.expiresAfter === undefined ? undefined : parseIsoDuration(deliverAt.expiresAfter));

/** A push's expiry given its due time: the job's (`jobExpiry`), or `deliverAt.expiresAfter` after `dueAt` if that is earlier. */
export function expiryAfterDue(deliverAt: DeliverAt, dueAt: Date, jobExpiry: Date | undefined): Date | undefined {
  const afterMs = expiresAfterMs(deliverAt);
  if (afterMs === undefined) return jobExpiry;
  const own = dueAt.getTime() + afterMs;
  return jobExpiry !== undefined && jobExpiry.getTime() <= own ? jobExpiry : new Date(own);
}
export type DeliverAt = z.infer<typeof DeliverAt>;

/**
 * Why a well-formed deliverAt cannot be accepted at `now` (too far ahead), or undefined.
 * Separate from the schema because the horizon is relative to now and configurable.
 */
export function scheduleProblem(deliverAt: DeliverAt | undefined, now: Date, horizonDays = DEFAULT_SCHEDULE_HORIZON_DAYS): string | undefined {
  if (deliverAt === undefined) return undefined;
  const horizonMs = now.getTime() + horizonDays * 86_400_000;
  // A local date counts from its start in UTC: within a day of the true instant in any zone.
  const when = 'at' in deliverAt ? deliverAt.at : deliverAt.date;
  if (when === undefined) return undefined;
  const instant = 'at' in deliverAt ? Date.parse(when) : Date.parse(`${when}T00:00:00Z`);
  return instant > horizonMs ? `deliverAt ${when} is more than ${horizonDays} days ahead` : undefined;
}
