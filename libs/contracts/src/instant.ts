import { z } from 'zod';

/** The furthest UTC offset PostgreSQL stores (15:59, MAX_TZDISP_HOUR); real zones reach ±14:00. */
const MAX_OFFSET_MINUTES = 15 * 60 + 59;

const offsetMinutes = (iso: string): number => {
  const m = /([+-])(\d{2}):?(\d{2})$/.exec(iso);
  return m === null ? 0 : Number(m[2]) * 60 + Number(m[3]);
};

/**
 * An instant with a UTC offset (ISO 8601, as `z.iso.datetime({ offset: true })`), which
 * PostgreSQL can store: it refuses an offset beyond ±15:59 ("time zone displacement out of
 * range") and the year 0000, which the pattern takes ("date/time field value out of range",
 * SQLSTATE 22008: its calendar goes from 1 BC to AD 1). A statement carries a whole batch (a
 * registrar's registrations, a demuxer part's jobs), so one such value would fail the others with
 * it, on every redelivery. Refused at the door instead.
 */
export const Instant = z.iso
  .datetime({ offset: true })
  .refine((s) => !s.startsWith('0000'), 'the year must be 0001 or later (there is no year 0000)')
  .refine((s) => offsetMinutes(s) <= MAX_OFFSET_MINUTES, 'the UTC offset must be at most ±15:59 (real zones reach ±14:00)');
