import { describe, expect, it } from 'vitest';
import { PushJob, expiresBeforeDue } from './push-job.ts';
import { DeliverAt, expiryAfterDue, parseIsoDuration, scheduleProblem } from './deliver-at.ts';
import { parseWith } from './parse.ts';

const job = (deliverAt: unknown) => ({ id: 'j', app: 'demo', userId: 'u', category: 'c', content: { title: 't' }, deliverAt });

describe('deliverAt', () => {
  it('accepts an instant, or a local time with optional date and jitter', () => {
    expect(DeliverAt.safeParse({ at: '2026-05-20T09:00:00+02:00' }).success).toBe(true);
    expect(DeliverAt.safeParse({ localTime: '08:30', date: '2026-05-20', jitter: 'PT30M' }).success).toBe(true);
    expect(DeliverAt.safeParse({ localTime: '23:59' }).success).toBe(true);
  });

  it('rejects impossible local times and dates with a reason naming the field', () => {
    for (const localTime of ['25:00', '24:00', '9:00', '09:60', 'noon']) {
      const r = parseWith(PushJob, job({ localTime }));
      expect(r.ok, localTime).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(/deliverAt/);
    }
    expect(DeliverAt.safeParse({ localTime: '09:00', date: '2026-02-30' }).success).toBe(false);
  });

  it('rejects malformed or too long jitter durations', () => {
    for (const jitter of ['30m', 'PT', 'P', 'PT-5M', 'P1M', 'P2D', '30']) {
      expect(DeliverAt.safeParse({ localTime: '09:00', jitter }).success, jitter).toBe(false);
    }
  });

  it('parses day/hour/minute/second durations', () => {
    expect(parseIsoDuration('PT30M')).toBe(1_800_000);
    expect(parseIsoDuration('PT1H30M')).toBe(5_400_000);
    expect(parseIsoDuration('P1D')).toBe(86_400_000);
    expect(parseIsoDuration('PT0.5S')).toBe(500);
    expect(parseIsoDuration('PT')).toBeUndefined();
  });

  it('finds a date beyond the horizon', () => {
    const now = new Date('2026-05-20T00:00:00Z');
    expect(scheduleProblem({ at: '2026-06-20T00:00:00Z' }, now)).toBeUndefined();
    expect(scheduleProblem({ localTime: '09:00', date: '2030-01-01' }, now)).toMatch(/more than 366 days ahead/);
    expect(scheduleProblem({ at: '2026-06-20T00:00:00Z' }, now, 7)).toMatch(/more than 7 days/);
    expect(scheduleProblem({ localTime: '09:00' }, now, 1)).toBeUndefined();
    expect(scheduleProblem(undefined, now)).toBeUndefined();
  });
});

describe('a scheduled job that would expire before it is due', () => {
  const accepted = new Date('2026-11-29T12:00:00Z');
  const check = (fields: Record<string, unknown>) => expiresBeforeDue(PushJob.parse({ ...job({ at: '2026-11-30T09:00:00Z' }), ...fields }), accepted);

  it('is named by the field that sets its expiry: a ttl counts from acceptance, not from deliverAt', () => {
    expect(check({ ttl: 3600 })).toEqual({
      path: 'ttl',
      message:
        'the job expires at 2026-11-29T13:00:00.000Z, before it is due (2026-11-30T09:00:00Z), so nothing would be delivered: ttl counts from acceptance, so give one longer than the wait (or an expiresAt after deliverAt)',
    });
    expect(check({ ttl: 0 })).toMatchObject({ path: 'ttl' }); // now-or-never, scheduled for tomorrow
    expect(check({ expiresAt: '2026-11-30T08:00:00Z' })).toMatchObject({ path: 'expiresAt', message: expect.stringMatching(/give an expiresAt after deliverAt$/) });
  });

  it('passes a job that can still deliver, or whose due time depends on each device', () => {
    expect(check({})).toBeUndefined();
    expect(check({ ttl: 86_400 })).toBeUndefined();
    expect(check({ expiresAt: '2026-11-30T10:00:00Z' })).toBeUndefined();
    // On 2026-11-30 09:00 local, the first devices (UTC+14) are due at 2026-11-29T19:00Z.
    const local = (ttl: number) => expiresBeforeDue(PushJob.parse({ ...job({ localTime: '09:00', date: '2026-11-30' }), ttl }), accepted);
    expect(local(6 * 3600)).toMatchObject({ path: 'ttl', message: expect.stringContaining('before it is due (2026-11-30 09:00 local time)') });
    expect(local(8 * 3600)).toBeUndefined();
    expect(expiresBeforeDue(PushJob.parse({ ...job({ localTime: '09:00' }), ttl: 60 }), accepted)).toBeUndefined();
    // Due already (an instant in the past goes at once): judged by its expiry alone, elsewhere.
    expect(expiresBeforeDue(PushJob.parse({ ...job({ at: '2026-11-29T11:00:00Z' }), ttl: 60 }), accepted)).toBeUndefined();
  });

  it('refuses an expiresAfter that has run out for every push when the job is accepted, naming deliverAt.expiresAfter', () => {
    // Accepted 2026-11-29T12:00Z: an instant at 09:00 that day plus PT2H has passed; plus PT4H has not.
    const after = (deliverAt: object) => expiresBeforeDue(PushJob.parse(job(deliverAt)), accepted);
    expect(after({ at: '2026-11-29T09:00:00Z', expiresAfter: 'PT2H' })).toEqual({
      path: 'deliverAt.expiresAfter',
      message:
        'every push expires PT2H after its due time, and the last due time (2026-11-29T09:00:00.000Z) is more than that before the job was accepted (2026-11-29T12:00:00.000Z), so nothing would be delivered',
    });
    expect(after({ at: '2026-11-29T09:00:00Z', expiresAfter: 'PT4H' })).toBeUndefined();
    // 21:00 on the 28th comes last at UTC−12, 2026-11-29T09:00Z; with a two-hour window, up to 11:00Z.
    expect(after({ localTime: '21:00', date: '2026-11-28', expiresAfter: 'PT2H' })).toMatchObject({ path: 'deliverAt.expiresAfter' });
    expect(after({ localTime: '21:00', date: '2026-11-28', jitter: 'PT2H', expiresAfter: 'PT2H' })).toBeUndefined();
    expect(after({ localTime: '21:00', expiresAfter: 'PT1M' })).toBeUndefined();
  });
});

describe('deliverAt.expiresAfter', () => {
  it('is a duration of a minute to 28 days, with either kind of deliverAt', () => {
    for (const expiresAfter of ['PT1M', 'PT2H', 'P28D']) {
      expect(DeliverAt.safeParse({ at: '2026-05-20T09:00:00Z', expiresAfter }).success, expiresAfter).toBe(true);
      expect(DeliverAt.safeParse({ localTime: '09:00', expiresAfter }).success, expiresAfter).toBe(true);
    }
    for (const expiresAfter of ['PT59S', 'P29D', '2h', 'PT', 'P1M']) {
      const r = parseWith(PushJob, job({ localTime: '09:00', expiresAfter }));
      expect(r.ok, expiresAfter).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(/deliverAt.*must be an ISO-8601 duration of at least a minute and at most 28 days/);
    }
  });

  it("makes each push's expiry that long after its own due time, unless the job's comes first", () => {
    const due = new Date('2030-01-01T09:00:00Z');
    expect(expiryAfterDue({ localTime: '09:00', expiresAfter: 'PT2H' }, due, undefined)).toEqual(new Date('2030-01-01T11:00:00Z'));
    expect(expiryAfterDue({ localTime: '09:00', expiresAfter: 'PT2H' }, due, new Date('2030-01-01T10:00:00Z'))).toEqual(new Date('2030-01-01T10:00:00Z'));
    expect(expiryAfterDue({ localTime: '09:00', expiresAfter: 'PT2H' }, due, new Date('2030-01-02T00:00:00Z'))).toEqual(new Date('2030-01-01T11:00:00Z'));
    expect(expiryAfterDue({ localTime: '09:00' }, due, undefined)).toBeUndefined();
  });
});
