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
export function canonicalZone(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    const resolved = new Intl.DateTimeFormat(undefined, { timeZone: v }).resolvedOptions().timeZone;
    return resolved.toLowerCase() === v.toLowerCase() ? resolved : v;
  } catch {
    return v;
  }
}

/** A device's IANA zone, used to resolve local delivery times (see timeZoneProblem), stored as ICU spells it. */
export const TimeZone = z
  .preprocess(canonicalZone, z.string().max(64).superRefine(check(timeZoneProblem)))
  .describe('IANA time zone name, e.g. "Europe/Berlin"');

/**
 * A device's locale as the platforms print it, as a BCP 47 tag: "_" is "-" (iOS `Locale.identifier`,
 * Android `Locale.toString()`: "en_US"); Android's part after "_#" is a script of four letters
 * (put after the language: "zh_CN_#Hans" is "zh-Hans-CN") and then extensions, which are dropped
 * ("en_US_#u-mu-celsius" is "en-US"); iOS's "@" keywords are dropped ("ja_JP@calendar=japanese" is
 * "ja-JP"); a Java variant that is no BCP 47 variant is dropped ("th_TH_TH_#u-nu-thai" is "th-TH");
 * and the case is made canonical ("EN-us" is "en-US"), since segments compare locales as stored.
 * Only the case: a language code the platform still reports in its old form ("iw") stays as given,
 * as the segments that name it do. A string that is no tag even so is left for localeProblem.
 */
export function canonicalLocale(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const [head = '', android] = (v.split('@')[0] ?? '').split('_#');
  const script = android !== undefined && /^[A-Za-z]{4}(?:-|$)/.test(android) ? android.slice(0, 4) : undefined;
  const [language = '', ...rest] = head.split('_');
  const parts = [language, ...(script === undefined ? [] : [script]), ...rest].filter((p) => p !== '');
  // The whole tag, else without what follows the region (a Java variant such as "TH").
  const whole = parts.join('-');
  return inCanonicalCase(whole) ?? inCanonicalCase(parts.slice(0, script === undefined ? 2 : 3).join('-')) ?? v.replace(/_/g, '-');
}

/** `tag` in BCP 47's canonical case, when case is all that canonicalising changes; undefined for no tag. */
function inCanonicalCase(tag: string): string | undefined {
  try {
    const canonical = Intl.getCanonicalLocales(tag)[0];
    if (canonical === undefined) return undefined;
    return canonical.toLowerCase() === tag.toLowerCase() ? canonical : tag;
  } catch {
    return undefined;
  }
}

/**
 * A device's language, a BCP 47 tag, as canonicalLocale reads the platforms' spellings, so no app
 * loses a registration over them.
 */
export const LocaleTag = z
  .preprocess(canonicalLocale, z.string().min(2).max(35).superRefine(check(localeProblem)))
  .describe('BCP 47 language tag, e.g. "en-GB" ("en_GB" is taken as "en-GB")');
