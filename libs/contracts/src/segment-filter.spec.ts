import { describe, expect, it } from 'vitest';
import { appVersionParts, parseSegment, SEGMENT_LIMITS, SegmentText, type SegmentFilter } from './segment-filter.ts';

const ok = (text: string): SegmentFilter => {
  const r = parseSegment(text);
  if (!r.ok) throw new Error(`expected ${text} to parse: ${r.message}`);
  return r.filter;
};
const error = (text: string): { position: number; message: string } => {
  const r = parseSegment(text);
  if (r.ok) throw new Error(`expected ${text} to fail`);
  return { position: r.position, message: r.message };
};

describe('parseSegment: valid filters', () => {
  it('parses the full example with and, in, lastSeen, not and parentheses', () => {
    expect(ok('platform = "apns" and appVersion >= "5.0" and locale in ("de-DE", "de-AT") and lastSeen within 30d and not (platform = "fcm")')).toEqual({
      kind: 'and',
      args: [
        { kind: 'compare', field: 'platform', op: '=', value: 'apns' },
        { kind: 'compare', field: 'appVersion', op: '>=', value: '5.0' },
        { kind: 'in', field: 'locale', values: ['de-DE', 'de-AT'] },
        { kind: 'lastSeen', relation: 'within', hours: 720 },
        { kind: 'not', arg: { kind: 'compare', field: 'platform', op: '=', value: 'fcm' } },
      ],
    });
  });

  it('binds and tighter than or; parentheses override', () => {
    const a = { kind: 'compare', field: 'platform', op: '=', value: 'apns' };
    const b = { kind: 'compare', field: 'language', op: '=', value: 'de' };
    const c = { kind: 'compare', field: 'timezone', op: '!=', value: 'UTC' };
    expect(ok('platform = "apns" or language = "de" and timezone != "UTC"')).toEqual({ kind: 'or', args: [a, { kind: 'and', args: [b, c] }] });
    expect(ok('(platform = "apns" or language = "de") and timezone != "UTC"')).toEqual({ kind: 'and', args: [{ kind: 'or', args: [a, b] }, c] });
  });

  it('accepts case-insensitive keywords and fields, bare version numbers, hours, and lowercases a language', () => {
    expect(ok('AppVersion < 5.10 AND lastseen BEFORE 12h OR NOT Language = "DE"')).toEqual({
      kind: 'or',
      args: [
        { kind: 'and', args: [{ kind: 'compare', field: 'appVersion', op: '<', value: '5.10' }, { kind: 'lastSeen', relation: 'before', hours: 12 }] },
        { kind: 'not', arg: { kind: 'compare', field: 'language', op: '=', value: 'de' } },
      ],
    });
  });

  it('takes a locale and a zone in the case devices store them, so another casing still matches', () => {
    expect(ok('locale = "de-de" and timezone in ("europe/berlin", "utc") and not (locale in ("EN-us", "zh-hant-tw"))')).toEqual({
      kind: 'and',
      args: [
        { kind: 'compare', field: 'locale', op: '=', value: 'de-DE' },
        { kind: 'in', field: 'timezone', values: ['Europe/Berlin', 'UTC'] },
        { kind: 'not', arg: { kind: 'in', field: 'locale', values: ['en-US', 'zh-Hant-TW'] } },
      ],
    });
  });

  it('reads escaped quotes in strings', () => {
    expect(parseSegment('timezone = "Europe/Ber\\"lin"')).toMatchObject({ ok: false, message: expect.stringContaining('bad value "Europe/Ber\\"lin"') });
  });

  it('accepts exactly the limits', () => {
    const fifty = Array.from({ length: SEGMENT_LIMITS.maxComparisons }, () => 'platform = "apns"').join(' or ');
    expect(parseSegment(fifty).ok).toBe(true);
    const hundred = `platform in (${Array.from({ length: 100 }, () => '"fcm"').join(',')})`;
    expect(parseSegment(hundred).ok).toBe(true);
    const ten = `${'('.repeat(10)}platform = "fcm"${')'.repeat(10)}`;
    expect(parseSegment(ten).ok).toBe(true);
  });

  it('SegmentText validates at a door and yields the filter', () => {
    expect(SegmentText.parse('platform = "fcm"')).toEqual({ kind: 'compare', field: 'platform', op: '=', value: 'fcm' });
    const r = SegmentText.safeParse('platform = ');
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toBe('segment: unexpected end of input at column 12; expected a value (a "quoted string")');
  });
});

describe('parseSegment: each error names its column', () => {
  it.each([
    ['platform = "apns" and (locale = )', 33, 'segment: unexpected ")" at column 33; expected a value (a "quoted string")'],
    ['', 1, 'segment: unexpected end of input at column 1; expected a field or "("'],
    ['country = "DE"', 1, 'segment: unexpected "country" at column 1; expected a field (platform, appVersion, locale, language, timezone, lastSeen)'],
    ['platform "apns"', 10, 'segment: unexpected "apns" at column 10; expected an operator (=, !=, in, <, <=, >, >=)'],
    ['platform >= "apns"', 10, 'segment: operator ">=" on platform at column 10; only appVersion compares with <, <=, >, >='],
    ['platform = "ios"', 12, 'segment: bad value "ios" at column 12; platform must be one of "apns", "fcm", "web"'],
    ['appVersion > "five"', 14, 'segment: bad value "five" at column 14; appVersion must be dotted numbers, e.g. "5.2"'],
    ['timezone = "Mars/Base"', 12, 'segment: bad value "Mars/Base" at column 12; "Mars/Base" is not an IANA time zone name (e.g. "Europe/Berlin", "America/New_York", "UTC")'],
    ['locale = "en_GB"', 10, 'segment: bad value "en_GB" at column 10; "en_GB" is not a BCP 47 language tag (e.g. "en-GB", "de", "zh-Hant-TW"; use "-", not "_")'],
    ['lastSeen after 3d', 10, 'segment: unexpected "after" at column 10; expected "within" or "before" after lastSeen'],
    ['lastSeen within 30', 17, 'segment: unexpected "30" at column 17; expected a duration such as 30d or 12h'],
    ['lastSeen within 4000d', 17, 'segment: duration "4000d" out of range at column 17; expected 1h to 3650d'],
    ['lastSeen within 0d', 17, 'segment: duration "0d" out of range at column 17; expected 1h to 3650d'],
    ['platform in "apns"', 13, 'segment: unexpected "apns" at column 13; expected "(" after in'],
    ['platform in ("apns" "fcm")', 21, 'segment: unexpected "fcm" at column 21; expected "," or ")"'],
    ['(platform = "apns"', 19, 'segment: unexpected end of input at column 19; expected ")"'],
    ['platform = "apns")', 18, 'segment: unexpected ")" at column 18; expected "and", "or" or the end of the filter'],
    ['platform = "apns" and', 22, 'segment: unexpected end of input at column 22; expected a field or "("'],
    ['platform = "apns', 12, 'segment: unterminated string at column 12'],
    ['platform = "a\\pns"', 14, 'segment: a string may only escape \\" and \\\\ at column 14'],
    ['platform = \'apns\'', 12, 'segment: unexpected character "\'" at column 12'],
    ['not and', 5, 'segment: unexpected "and" at column 5; expected a field or "("'],
  ])('%s', (text, position, message) => {
    expect(error(text)).toEqual({ position, message });
  });

  it('refuses more than 2000 characters', () => {
    expect(error(`platform = "apns"${' '.repeat(2000)}`)).toEqual({ position: 2001, message: 'segment: longer than 2000 characters at column 2001' });
  });

  it('refuses the 51st comparison where it starts', () => {
    const text = Array.from({ length: 51 }, () => 'platform = "apns"').join(' or ');
    expect(error(text)).toEqual({ position: 50 * 21 + 1, message: 'segment: more than 50 comparisons at column 1051; split the audience or simplify the filter' });
  });

  it('refuses the 101st value of an in list where it starts', () => {
    const text = `platform in (${Array.from({ length: 101 }, () => '"fcm"').join(',')})`;
    expect(error(text)).toEqual({ position: 14 + 100 * 6, message: `segment: more than 100 values in "in" at column ${14 + 100 * 6}; split the list` });
  });

  it('refuses nesting deeper than 10, parentheses and not alike', () => {
    expect(error(`${'('.repeat(11)}platform = "fcm"${')'.repeat(11)}`)).toEqual({ position: 11, message: 'segment: nesting deeper than 10 at column 11; use fewer parentheses and "not"s' });
    expect(error(`${'not '.repeat(11)}platform = "fcm"`).position).toBe(41);
  });
});

describe('appVersionParts', () => {
  it('compares numerically with trailing zeros trimmed and the suffix ignored', () => {
    expect(appVersionParts('5.2.0-beta1')).toEqual([5, 2]);
    expect(appVersionParts('5')).toEqual([5]);
    expect(appVersionParts('5.0.0')).toEqual([5]);
    expect(appVersionParts('0.0')).toEqual([0]);
    expect(appVersionParts('5.0.10')).toEqual([5, 0, 10]);
  });
});
