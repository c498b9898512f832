import { z } from 'zod';
import { Platforms } from './names.ts';
import { canonicalLocale, canonicalZone, localeProblem, timeZoneProblem } from './device-locale.ts';
import { describeToken, SegmentSyntaxError, tokenize, type Token } from './segment-filter-tokens.ts';

/**
 * The segment language (issue 20): a small filter over the attributes a device reports at
 * registration, e.g.
 *
 *   platform = "apns" and appVersion >= "5.0" and locale in ("de-DE", "de-AT")
 *     and lastSeen within 30d and not (timezone = "Europe/Berlin")
 *
 * Fields: platform, appVersion, locale, language (the locale's first subtag: `language = "de"`
 * matches "de", "de-DE", "de-AT"), timezone, lastSeen (`within 30d` / `before 12h`, days or hours).
 * Operators: `=`, `!=`, `in (…)` on every field but lastSeen; `<`, `<=`, `>`, `>=` on appVersion
 * only, compared by its numbers ("5.10" > "5.9"; "5.2" = "5.2.0"; a suffix like "-beta" is ignored).
 * `and` binds tighter than `or`; `not` and parentheses as usual; keywords are case-insensitive.
 * A device that lacks an attribute matches no comparison on it (`!=` included); `not (…)` does.
 * Limits: SEGMENT_LIMITS.
 */
export const SEGMENT_LIMITS = { maxLength: 2000, maxComparisons: 50, maxInValues: 100, maxNesting: 10, maxDays: 3650 } as const;

/** Dotted numbers (each ≤ 9 digits, ≤ 10 of them) with an optional `-suffix` or `+build`, ≤ 50 characters. */
export const APP_VERSION_PATTERN = /^[0-9]{1,9}(\.[0-9]{1,9}){0,9}([-+][0-9A-Za-z.+-]{1,40})?$/;
export const AppVersion = z
  .string()
  .max(50)
  .regex(APP_VERSION_PATTERN, 'must be dotted numbers with an optional suffix, e.g. "5.2.1" or "5.3.0-beta2"');

/**
 * The numbers of a version as compared, trailing zeros trimmed ("5.2.0-rc1" → [5, 2]); the same
 * form as the devices.app_version_parts column, so int[] order is version order.
 */
export function appVersionParts(version: string): number[] {
  const numeric = /^[0-9]+(\.[0-9]+)*/.exec(version)?.[0] ?? '';
  const parts = numeric.split('.').map(Number);
  while (parts.length > 1 && parts[parts.length - 1] === 0) parts.pop();
  return parts;
}

export type SegmentField = 'platform' | 'appVersion' | 'locale' | 'language' | 'timezone';
export type SegmentComparator = '=' | '!=' | '<' | '<=' | '>' | '>=';

/** A parsed filter: JSON-serializable, so a job can carry it. */
export type SegmentFilter =
  | { kind: 'and' | 'or'; args: SegmentFilter[] }
  | { kind: 'not'; arg: SegmentFilter }
  | { kind: 'compare'; field: SegmentField; op: SegmentComparator; value: string }
  | { kind: 'in'; field: SegmentField; values: string[] }
  | { kind: 'lastSeen'; relation: 'within' | 'before'; hours: number };

export type SegmentParse = { ok: true; filter: SegmentFilter } | { ok: false; position: number; message: string };

const FIELDS: Record<string, SegmentField | 'lastSeen'> = {
  platform: 'platform',
  appversion: 'appVersion',
  locale: 'locale',
  language: 'language',
  timezone: 'timezone',
  lastseen: 'lastSeen',
};
const KEYWORDS = new Set(['and', 'or', 'not', 'in', 'within', 'before']);

/**
 * Why `value` cannot be a value of `field`, or the value as devices store it: a locale and a zone in
 * their canonical case, as registration stores them ("de-de" is "de-DE", "europe/berlin" is
 * "Europe/Berlin"), since the segment compares them with what is stored, case and all.
 */
function checkValue(field: SegmentField, value: string): { problem: string } | { value: string } {
  switch (field) {
    case 'platform':
      return (Platforms as readonly string[]).includes(value) ? { value } : { problem: `platform must be one of ${Platforms.map((p) => `"${p}"`).join(', ')}` };
    case 'appVersion':
      return APP_VERSION_PATTERN.test(value) && value.length <= 50 ? { value } : { problem: 'appVersion must be dotted numbers, e.g. "5.2"' };
    case 'locale': {
      const problem = localeProblem(value);
      return problem === undefined ? { value: canonicalLocale(value) as string } : { problem };
    }
    case 'language':
      return /^[A-Za-z]{2,8}$/.test(value) ? { value: value.toLowerCase() } : { problem: 'language must be a language subtag, e.g. "de"' };
    case 'timezone': {
      const problem = timeZoneProblem(value);
      return problem === undefined ? { value: canonicalZone(value) as string } : { problem };
    }
  }
}

class Parser {
  private i = 0;
  private comparisons = 0;
  constructor(private readonly tokens: Token[]) {}

  private get peek(): Token {
    return this.tokens[this.i] as Token;
  }

  private next(): Token {
    const t = this.peek;
    if (t.kind !== 'end') this.i += 1;
    return t;
  }

  private unexpected(t: Token, expected: string): never {
    throw new SegmentSyntaxError(t.column, `unexpected ${describeToken(t)}`, `expected ${expected}`);
  }

  private isWord(t: Token, word: string): boolean {
    return t.kind === 'word' && t.text.toLowerCase() === word;
  }

  private isPunct(t: Token, p: string): boolean {
    return t.kind === 'punct' && t.text === p;
  }

  parse(): SegmentFilter {
    const filter = this.or(0);
    if (this.peek.kind !== 'end') this.unexpected(this.peek, '"and", "or" or the end of the filter');
    return filter;
  }

  private or(depth: number): SegmentFilter {
    const args = [this.and(depth)];
    while (this.isWord(this.peek, 'or')) {
      this.next();
      args.push(this.and(depth));
    }
    return args.length === 1 ? (args[0] as SegmentFilter) : { kind: 'or', args };
  }

  private and(depth: number): SegmentFilter {
    const args = [this.unary(depth)];
    while (this.isWord(this.peek, 'and')) {
      this.next();
      args.push(this.unary(depth));
    }
    return args.length === 1 ? (args[0] as SegmentFilter) : { kind: 'and', args };
  }

  private nest(t: Token, depth: number): number {
    if (depth + 1 > SEGMENT_LIMITS.maxNesting) {
      throw new SegmentSyntaxError(t.column, `nesting deeper than ${SEGMENT_LIMITS.maxNesting}`, 'use fewer parentheses and "not"s');
    }
    return depth + 1;
  }

  private unary(depth: number): SegmentFilter {
    const t = this.peek;
    if (this.isWord(t, 'not')) {
      this.next();
      return { kind: 'not', arg: this.unary(this.nest(t, depth)) };
    }
    if (this.isPunct(t, '(')) {
      this.next();
      const inner = this.or(this.nest(t, depth));
      if (!this.isPunct(this.peek, ')')) this.unexpected(this.peek, '")"');
      this.next();
      return inner;
    }
    return this.comparison();
  }

  private comparison(): SegmentFilter {
    const t = this.next();
    const field = t.kind === 'word' ? FIELDS[t.text.toLowerCase()] : undefined;
    if (field === undefined) {
      this.unexpected(t, t.kind === 'word' && !KEYWORDS.has(t.text.toLowerCase()) ? `a field (${Object.values(FIELDS).join(', ')})` : 'a field or "("');
    }
    this.comparisons += 1;
    if (this.comparisons > SEGMENT_LIMITS.maxComparisons) {
      throw new SegmentSyntaxError(t.column, `more than ${SEGMENT_LIMITS.maxComparisons} comparisons`, 'split the audience or simplify the filter');
    }
    return field === 'lastSeen' ? this.lastSeen() : this.compare(field);
  }

  private lastSeen(): SegmentFilter {
    const rel = this.next();
    if (!this.isWord(rel, 'within') && !this.isWord(rel, 'before')) this.unexpected(rel, '"within" or "before" after lastSeen');
    const d = this.next();
    if (d.kind !== 'duration') this.unexpected(d, 'a duration such as 30d or 12h');
    const amount = Number(d.text.slice(0, -1));
    const hours = d.text.endsWith('d') ? amount * 24 : amount;
    if (amount < 1 || hours > SEGMENT_LIMITS.maxDays * 24) {
      throw new SegmentSyntaxError(d.column, `duration ${describeToken(d)} out of range`, `expected 1h to ${SEGMENT_LIMITS.maxDays}d`);
    }
    return { kind: 'lastSeen', relation: rel.text.toLowerCase() as 'within' | 'before', hours };
  }

  private value(field: SegmentField): string {
    const t = this.next();
    const numeric = field === 'appVersion' && t.kind === 'number';
    if (t.kind !== 'string' && !numeric) this.unexpected(t, 'a value (a "quoted string")');
    const checked = checkValue(field, t.text);
    if ('problem' in checked) throw new SegmentSyntaxError(t.column, `bad value ${describeToken(t)}`, checked.problem);
    return checked.value;
  }

  private compare(field: SegmentField): SegmentFilter {
    const op = this.next();
    if (this.isWord(op, 'in')) return this.inList(field);
    if (op.kind !== 'punct' || ['(', ')', ','].includes(op.text)) this.unexpected(op, 'an operator (=, !=, in, <, <=, >, >=)');
    if (field !== 'appVersion' && !['=', '!='].includes(op.text)) {
      throw new SegmentSyntaxError(op.column, `operator "${op.text}" on ${field}`, 'only appVersion compares with <, <=, >, >=');
    }
    return { kind: 'compare', field, op: op.text as SegmentComparator, value: this.value(field) };
  }

  private inList(field: SegmentField): SegmentFilter {
    const open = this.next();
    if (!this.isPunct(open, '(')) this.unexpected(open, '"(" after in');
    const values: string[] = [];
    for (;;) {
      if (values.length === SEGMENT_LIMITS.maxInValues) {
        throw new SegmentSyntaxError(this.peek.column, `more than ${SEGMENT_LIMITS.maxInValues} values in "in"`, 'split the list');
      }
      values.push(this.value(field));
      const sep = this.next();
      if (this.isPunct(sep, ')')) return { kind: 'in', field, values };
      if (!this.isPunct(sep, ',')) this.unexpected(sep, '"," or ")"');
    }
  }
}

/** Parses a segment; an error names the 1-based column of the offending token. Never throws. */
export function parseSegment(text: string): SegmentParse {
  if (text.length > SEGMENT_LIMITS.maxLength) {
    const position = SEGMENT_LIMITS.maxLength + 1;
    return { ok: false, position, message: `segment: longer than ${SEGMENT_LIMITS.maxLength} characters at column ${position}` };
  }
  try {
    return { ok: true, filter: new Parser(tokenize(text)).parse() };
  } catch (err) {
    if (err instanceof SegmentSyntaxError) return { ok: false, position: err.column, message: err.message };
    throw err;
  }
}

/** A segment as text, validated at a door (the 400 names the column); parses to its SegmentFilter. */
export const SegmentText = z.string().transform((text, ctx): SegmentFilter => {
  const parsed = parseSegment(text);
  if (parsed.ok) return parsed.filter;
  ctx.addIssue({ code: 'custom', message: parsed.message, params: { position: parsed.position } });
  return z.NEVER;
});
