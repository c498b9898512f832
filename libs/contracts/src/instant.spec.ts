import { describe, expect, it } from 'vitest';
import { Instant } from './instant.ts';
import { parseWith } from './parse.ts';
import { Registration } from './registration.ts';
import { TopicMembership } from './topic-membership.ts';

describe('Instant: an ISO 8601 instant whose UTC offset PostgreSQL can store', () => {
  it.each(['2026-11-29T12:00:00Z', '2026-11-29T12:00:00.123456+14:00', '2026-11-29T12:00:00-12:00', '2026-11-29T12:00:00+15:59', '2026-11-29T12:00:00-15:59'])('takes %s', (s) => {
    expect(Instant.safeParse(s).success).toBe(true);
  });

  it.each(['2026-11-29T12:00:00+16:00', '2026-11-29T12:00:00-16:00', '2026-11-29T12:00:00+23:59'])('refuses %s (PostgreSQL: time zone displacement out of range)', (s) => {
    expect(Instant.safeParse(s).error?.issues[0]?.message).toBe('the UTC offset must be at most ±15:59 (real zones reach ±14:00)');
  });

  it.each(['0000-01-01T00:00:00Z', '0000-12-31T23:59:59.999+14:00'])('refuses %s (PostgreSQL has no year 0000: 22008, the API answered 500)', (s) => {
    expect(Instant.safeParse(s).error?.issues[0]?.message).toBe('the year must be 0001 or later (there is no year 0000)');
  });

  it('takes the year 0001, also with an offset that puts it in 1 BC in UTC (PostgreSQL stores that)', () => {
    expect(Instant.safeParse('0001-01-01T00:00:00Z').success).toBe(true);
    expect(Instant.safeParse('0001-01-01T00:00:00+01:00').success).toBe(true);
  });

  it("names the field of a topic membership's event time", () => {
    const parsed = parseWith(TopicMembership, { kind: 'topic-membership', app: 'demo', topic: 'news', userId: 'u', subscribed: true, eventAt: '0000-01-01T00:00:00Z' });
    expect(parsed).toEqual({ ok: false, reason: 'schema violation: eventAt: the year must be 0001 or later (there is no year 0000)' });
  });

  it("names the field of a registration's event time", () => {
    const parsed = parseWith(Registration, { kind: 'register', app: 'demo', userId: 'u', platform: 'apns', token: 'ab'.repeat(32), eventAt: '2026-11-29T12:00:00+16:00' });
    expect(parsed).toEqual({ ok: false, reason: 'schema violation: eventAt: the UTC offset must be at most ±15:59 (real zones reach ±14:00)' });
  });
});
