/** The three forms of an HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, then the obsolete RFC 850 and asctime forms a recipient must still read. */
const IMF_FIXDATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const RFC_850 = /^[A-Z][a-z]+, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$/;
const ASCTIME = /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

/**
 * How long a Retry-After header (RFC 9110 §10.2.3) asks to wait, in ms: delay-seconds (a whole
 * number) or an HTTP-date (a date passed is 0). Undefined when absent or unreadable: anything else
 * ("1.5", "soon", "Dec 2026") is not guessed at, so the caller's default applies.
 */
export function retryAfterMs(header: string | null | undefined, now: number = Date.now()): number | undefined {
  const value = header?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  if (!IMF_FIXDATE.test(value) && !RFC_850.test(value) && !ASCTIME.test(value)) return undefined;
  // asctime carries no zone; HTTP-dates are always GMT.
  const at = Date.parse(ASCTIME.test(value) ? `${value} GMT` : value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The wait after a 503 overloaded whose Retry-After is missing or unreadable: the API's own answer (1 s). */
export const DEFAULT_OVERLOAD_WAIT_MS = 1_000;

/**
 * The wait before sending a request refused 503 overloaded again: what its Retry-After asked
 * (retryAfterMs; undefined: DEFAULT_OVERLOAD_WAIT_MS) plus up to a fifth more (at least up to
 * 100 ms), so the clients one overload refused do not all come back in the same instant. Never
 * shorter than Retry-After.
 */
export function overloadWaitMs(askedMs: number | undefined, random: () => number = Math.random): number {
  const asked = askedMs ?? DEFAULT_OVERLOAD_WAIT_MS;
  return asked + Math.round(random() * Math.max(100, asked / 5));
}
