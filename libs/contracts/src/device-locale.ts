import { z } from 'zod';

/**
 * Why `zone` is not an IANA time zone Herald can resolve local times in, or undefined.
 *
 * Checked with Node's ICU zone data (`Intl.DateTimeFormat`), which is exactly what luxon's
 * `IANAZone.isValidZone` does, so the deschedulers (libs/scheduling, luxon) and this door agree by
 * construction (contracts may not depend on luxon; libs/scheduling's zone-agreement spec pins it).
 * Fixed offsets ("+01:00") are refused even where ICU accepts them: a device's zone has DST rules.
 */
export function timeZoneProblem(zone: string): string | undefined {
  const refused = `"${zone}" is not an IANA time zone name (e.g. "Europe/Berlin", "America/New_York", "UTC")`;
  if (zone.length === 0 || /^[+-]/.test(zone)) return refused;
  try {
    new Intl.DateTimeFormat(undefined, { timeZone: zone });
    return undefined;
  } catch {
    return refused;
  }
}

/** Why `tag` is not a well-formed BCP 47 language tag, or undefined ("en-GB", "zh-Hant-TW"; not "en_GB"). */
export function localeProblem(tag: string): string | undefined {
  try {
    Intl.getCanonicalLocales(tag);
    return undefined;
  } catch {
    return `"${tag}" is not a BCP 47 language tag (e.g. "en-GB", "de", "zh-Hant-TW"; use "-", not "_")`;
  }
}

const check = (problem: (v: string) => string | undefined) => (value: string, ctx: z.RefinementCtx) => {
  const message = problem(value);
  if (message !== undefined) ctx.addIssue({ code: 'custom', message });
};

/** A device's IANA zone, used to resolve local delivery times (see timeZoneProblem). */
export const TimeZone = z.string().max(64).superRefine(check(timeZoneProblem)).describe('IANA time zone name, e.g. "Europe/Berlin"');

/**
 * A device's language, a BCP 47 tag. iOS (`Locale.identifier`) and Android (`Locale.toString()`)
 * spell it with "_" ("en_US"): that is taken as "en-US", not refused, so no app loses a
 * registration over the separator.
 */
export const LocaleTag = z
  .preprocess((v) => (typeof v === 'string' ? v.replace(/_/g, '-') : v), z.string().min(2).max(35).superRefine(check(localeProblem)))
  .describe('BCP 47 language tag, e.g. "en-GB" ("en_GB" is taken as "en-GB")');
