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

/**
 * A zone in the case ICU spells it ("europe/berlin" is "Europe/Berlin"): segments compare zones as
 * stored, so two casings of one zone must be one. Only the case: ICU's own name for a zone can be
 * an older one ("Asia/Kolkata" resolves to "Asia/Calcutta"), and the name the device gave stays.
 * A string ICU does not know is left for timeZoneProblem.
 */
function canonicalZone(v: unknown): unknown {
  if (typeof v !== 'string' || timeZoneProblem(v) !== undefined) return v;
  const resolved = new Intl.DateTimeFormat(undefined, { timeZone: v }).resolvedOptions().timeZone;
  return resolved.toLowerCase() === v.toLowerCase() ? resolved : v;
}

/** A device's IANA zone, used to resolve local delivery times (see timeZoneProblem), stored as ICU spells it. */
export const TimeZone = z
  .preprocess(canonicalZone, z.string().max(64).superRefine(check(timeZoneProblem)))
  .describe('IANA time zone name, e.g. "Europe/Berlin"');

/**
 * A device's locale as the platforms print it, as a BCP 47 tag: "_" is "-" (iOS `Locale.identifier`,
 * Android `Locale.toString()`: "en_US"); Android's script after "_#" goes after the language
 * ("zh_CN_#Hans" is "zh-Hans-CN"); iOS's "@" keywords are dropped ("ja_JP@calendar=japanese" is
 * "ja-JP"); and the tag is stored in its canonical case ("EN-us" is "en-US"), since segments
 * compare locales as stored. A string that is no tag even so is left for localeProblem.
 */
export function canonicalLocale(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const [base = '', script] = (v.split('@')[0] ?? '').split('_#');
  const [language = '', ...rest] = base.split('_');
  const tag = [language, ...(script === undefined || script === '' ? [] : [script.split('-')[0]]), ...rest].filter((p) => p !== '').join('-').replace(/_/g, '-');
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? tag;
  } catch {
    return v.replace(/_/g, '-');
  }
}

/**
 * A device's language, a BCP 47 tag, as canonicalLocale reads the platforms' spellings, so no app
 * loses a registration over them.
 */
export const LocaleTag = z
  .preprocess(canonicalLocale, z.string().min(2).max(35).superRefine(check(localeProblem)))
  .describe('BCP 47 language tag, e.g. "en-GB" ("en_GB" is taken as "en-GB")');
