/**
 * PostgreSQL stores no NUL character (U+0000): a text parameter holding one fails its statement
 * (22021), and so does a jsonb string or key holding one (22P05). A statement carries a whole
 * batch (a demuxer part's users, a pusher's job-status outcomes), so one such value would fail the
 * batch's other jobs and pushes with it, on every redelivery. Contracts refuse it at the door
 * instead, naming the field.
 */
export const NO_NUL = 'must not contain the NUL character (U+0000)';

/** For `z.string().refine(hasNoNul, NO_NUL)`. */
export const hasNoNul = (s: string): boolean => !s.includes('\u0000');

/** The path of the first string or object key within `value` that holds a NUL character, if any. */
export function nulPath(value: unknown, path: Array<string | number> = []): Array<string | number> | undefined {
  if (typeof value === 'string') return hasNoNul(value) ? undefined : path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const at = nulPath(item, [...path, i]);
      if (at !== undefined) return at;
    }
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const at = hasNoNul(key) ? nulPath(item, [...path, key]) : [...path, key];
    if (at !== undefined) return at;
  }
  return undefined;
}
