import { describe, expect, it } from 'vitest';
import { Instant } from './instant.ts';
import { parseWith } from './parse.ts';
import { Registration } from './registration.ts';

describe('Instant: an ISO 8601 instant whose UTC offset PostgreSQL can store', () => {
  it.each(['2026-11-29T12:00:00Z', '2026-11-29T12:00:00.123456+14:00', '2026-11-29T12:00:00-12:00', '2026-11-29T12:00:00+15:59', '2026-11-29T12:00:00-15:59'])('takes %s', (s) => {
    expect(Instant.safeParse(s).success).toBe(true);
  });

  it.each(['2026-11-29T12:00:00+16:00', '2026-11-29T12:00:00-16:00', '2026-11-29T12:00:00+23:59'])('refuses %s (PostgreSQL: time zone displacement out of range)', (s) => {
    expect(Instant.safeParse(s).error?.issues[0]?.message).toBe('the UTC offset must be at most ±15:59 (real zones reach ±14:00)');
  });

  it("names the field of a registration's event time", () => {
    const parsed = parseWith(Registration, { kind: 'register', app: 'demo', userId: 'u', platform: 'apns', token: 'ab'.repeat(32), eventAt: '2026-11-29T12:00:00+16:00' });
    expect(parsed).toEqual({ ok: false, reason: 'schema violation: eventAt: the UTC offset must be at most ±15:59 (real zones reach ±14:00)' });
  });
});
