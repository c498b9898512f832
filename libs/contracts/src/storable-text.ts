import type { z } from 'zod';

/**
 * Text PostgreSQL cannot keep as given. A NUL character (U+0000) fails a text parameter's
 * statement (22021), and a jsonb string or key's (22P05). Half of a UTF-16 surrogate pair
 * (U+D800–U+DFFF alone) is not Unicode: as text it is sent as UTF-8, which has no such character,
 * so it is stored as U+FFFD (a user id would become another user's), and in JSON it is the escape
 * "\uD800", which jsonb refuses (22P02). A statement carries a whole batch (a demuxer part's users,
 * an audience job's fan-out, a pusher's job-status outcomes), so one such value would fail the
 * batch's other jobs and pushes with it. Contracts refuse both at the door instead, naming the field.
 */
export const NO_NUL = 'must not contain the NUL character (U+0000)';
export const NO_LONE_SURROGATE = 'must be well-formed Unicode: it holds half of a UTF-16 surrogate pair (U+D800–U+DFFF) alone';

/** For `z.string().refine(hasNoNul, NO_NUL)`. */
export const hasNoNul = (s: string): boolean => !s.includes('\u0000');

/** In a `u` regex a whole pair is one code point: only a half alone is in this range. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
export const isWellFormed = (s: string): boolean => !LONE_SURROGATE.test(s);

/**
 * Words Herald did not choose and cannot refuse (a provider's or a receiver's answer, recorded
 * after the push went out), made storable: each NUL and each lone surrogate half becomes U+FFFD.
 * Refused by PostgreSQL instead, the record of pushes already sent would fail, and they would be
 * sent again once their lease ran out.
 */
export function storableCopy(s: string): string {
  const noNul = hasNoNul(s) ? s : s.replaceAll('\u0000', '\uFFFD');
  return isWellFormed(noNul) ? noNul : noNul.replace(LONE_SURROGATES, '\uFFFD');
}
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'gu');

/** Why `s` cannot be stored as given (NO_NUL, NO_LONE_SURROGATE), or undefined. */
export const unstorableText = (s: string): string | undefined => (!hasNoNul(s) ? NO_NUL : !isWellFormed(s) ? NO_LONE_SURROGATE : undefined);

/** `schema` refused for text PostgreSQL cannot keep: for each string field that goes to it. */
export const storable = (schema: z.ZodString) => schema.refine(hasNoNul, NO_NUL).refine(isWellFormed, NO_LONE_SURROGATE);

/** The first string or object key within `value` that cannot be stored: its path and why. */
export function unstorablePart(value: unknown): { path: Array<string | number>; message: string } | undefined {
  const found = unstorableWithin(value);
  return found === undefined ? undefined : { path: found.path.reverse(), message: found.message };
}

/**
 * unstorablePart's walk, its path built backwards from the find (innermost first): a job's every
 * string and key is read at the doors (a job of 1,000 user ids, say), and most are fine, so nothing
 * is allocated for those.
 */
function unstorableWithin(value: unknown): { path: Array<string | number>; message: string } | undefined {
  if (typeof value === 'string') {
    const message = unstorableText(value);
    return message === undefined ? undefined : { path: [], message };
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const at = unstorableWithin(value[i]);
      if (at !== undefined) {
        at.path.push(i);
        return at;
      }
    }
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  for (const key of Object.keys(value)) {
    const message = unstorableText(key);
    const at = message === undefined ? unstorableWithin((value as Record<string, unknown>)[key]) : { path: [], message };
    if (at !== undefined) {
      at.path.push(key);
      return at;
    }
  }
  return undefined;
}
