// Retry-After (RFC 9110 §10.2.3), as APNs, FCM and Web Push services send it.

/**
 * Pure: a Retry-After header value (RFC 9110 §10.2.3: delay-seconds, or an HTTP-date) as whole
 * seconds from nowMs, rounded up so a pause is never shorter than asked; a date in the past is 0.
 * undefined when absent or unreadable.
 */
export function retryAfterSecondsOf(value: unknown, nowMs: number): number | undefined {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : undefined;
  if (text === undefined || text === '') return undefined;
  if (/^\d+$/.test(text)) return Number(text);
  // Every HTTP-date form starts with a day name; V8's Date.parse also accepts "1.5" and the like.
  const at = /^[A-Za-z]{3}/.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** Retry-After as milliseconds from nowMs (whole seconds, rounded up as above); undefined when absent or unreadable. */
export function retryAfterMs(value: unknown, nowMs = Date.now()): number | undefined {
  const seconds = retryAfterSecondsOf(value, nowMs);
  return seconds === undefined ? undefined : seconds * 1000;
}
