import { describe, expect, it } from 'vitest';
import { localeProblem, timeZoneProblem } from './device-locale.ts';
import { DeviceRegister } from './http-api.ts';
import { parseWith } from './parse.ts';
import { Registration } from './registration.ts';

const register = (extra: Record<string, unknown>) => ({
  kind: 'register',
  app: 'demo',
  platform: 'apns',
  token: 'ab'.repeat(32),
  userId: 'u1',
  eventAt: '2026-01-01T00:00:00Z',
  ...extra,
});

describe('device timezone and locale', () => {
  it.each(['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Asia/Calcutta', 'UTC', 'Etc/GMT+3', 'America/Argentina/Buenos_Aires', 'Pacific/Chatham'])(
    'accepts the IANA zone %j',
    (zone) => expect(timeZoneProblem(zone)).toBeUndefined(),
  );

  it.each(['Mars/Base', 'Mars/Olympus_Mons', 'Europe/Berln', 'local', 'system', 'UTC+3', '+01:00', '-05:00', ' Europe/Berlin', ''])('refuses %j', (zone) =>
    expect(timeZoneProblem(zone)).toMatch(/is not an IANA time zone name/),
  );

  it.each(['en', 'en-GB', 'de-DE', 'zh-Hant-TW', 'sr-Latn-RS', 'es-419'])('accepts the BCP 47 tag %j', (tag) => expect(localeProblem(tag)).toBeUndefined());

  it.each(['en--GB', 'en-', '12', 'x-', 'english language'])('refuses the locale %j', (tag) => expect(localeProblem(tag)).toMatch(/is not a BCP 47 language tag/));

  it('a Registration with an unknown zone is refused on timezone; a known one passes', () => {
    const bad = parseWith(Registration, register({ timezone: 'Mars/Base' }));
    expect(bad.ok ? '' : bad.reason).toMatch(/^schema violation: timezone: "Mars\/Base" is not an IANA time zone name/);
    expect(parseWith(Registration, register({ timezone: 'Europe/Berlin', locale: 'de-DE' })).ok).toBe(true);
  });

  it('a Registration with a malformed locale is refused on locale; "en_US" (iOS and Android spelling) is taken as "en-US"', () => {
    const bad = parseWith(Registration, register({ locale: 'english language' }));
    expect(bad.ok ? '' : bad.reason).toMatch(/^schema violation: locale: "english language" is not a BCP 47 language tag/);
    const ok = parseWith(Registration, register({ locale: 'en_US' }));
    expect(ok.ok && ok.value.kind === 'register' ? ok.value.locale : undefined).toBe('en-US');
  });

  it.each([
    ['zh_CN_#Hans', 'zh-Hans-CN'],
    ['sr_RS_#Latn', 'sr-Latn-RS'],
    ['ja_JP@calendar=japanese', 'ja-JP'],
    ['EN-us', 'en-US'],
    ['de_DE', 'de-DE'],
    ['zh-Hant-TW', 'zh-Hant-TW'],
    ['en_US_#u-mu-celsius', 'en-US'],
    ['ar_EG_#u-nu-latn', 'ar-EG'],
    ['th_TH_TH_#u-nu-thai', 'th-TH'],
    ['zh_TW_#Hant-u-nu-hanidec', 'zh-Hant-TW'],
    ['iw_IL', 'iw-IL'],
    ['es-419', 'es-419'],
  ])('reads the locale %j as %j (Android, iOS and case spellings of one tag are one)', (given, stored) => {
    const ok = parseWith(Registration, register({ locale: given }));
    expect(ok.ok && ok.value.kind === 'register' ? ok.value.locale : ok).toBe(stored);
  });

  it("stores a zone in ICU's case, so segments see one zone, and keeps the name the device gave", () => {
    const zoneOf = (timezone: string) => {
      const ok = parseWith(Registration, register({ timezone }));
      return ok.ok && ok.value.kind === 'register' ? ok.value.timezone : ok;
    };
    expect(zoneOf('europe/berlin')).toBe('Europe/Berlin');
    expect(zoneOf('Asia/Kolkata')).toBe('Asia/Kolkata'); // ICU's own name for it is Asia/Calcutta
    expect(zoneOf('UTC')).toBe('UTC');
  });

  it('POST /v1/devices (DeviceRegister) refuses them on the same fields', () => {
    const r = DeviceRegister.safeParse({ app: 'demo', platform: 'apns', token: 'ab'.repeat(32), userId: 'u1', timezone: 'Mars/Base', locale: 'en--US' });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path.join('.')).sort()).toEqual(['locale', 'timezone']);
  });

  it('the JSON schema of DeviceRegister still says timezone and locale are strings', async () => {
    const { z } = await import('zod');
    const json = z.toJSONSchema(DeviceRegister, { io: 'input', unrepresentable: 'any' }) as { properties: Record<string, { type?: string }> };
    expect(json.properties['timezone']?.type).toBe('string');
    expect(json.properties['locale']?.type).toBe('string');
  });
});
