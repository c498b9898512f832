import { describe, expect, it } from 'vitest';
import { resolveDeliverAt } from './resolve-deliver-at.ts';

const at = (iso: string) => new Date(iso);
const due = (...args: Parameters<typeof resolveDeliverAt>) => resolveDeliverAt(...args).dueAt.toISOString();

describe('resolveDeliverAt', () => {
  it('uses an absolute instant as is, whatever the zone', () => {
    expect(resolveDeliverAt({ at: '2026-06-01T09:00:00+02:00' }, 'Asia/Tokyo', 'j', 'd', at('2026-05-01T00:00:00Z'))).toEqual({
      dueAt: at('2026-06-01T07:00:00Z'),
      timezoneFallback: false,
    });
  });

  it('reads a local time in a southern-hemisphere zone (Sydney in its summer, UTC+11)', () => {
    expect(due({ localTime: '09:00', date: '2026-01-15' }, 'Australia/Sydney', 'j', 'd', at('2026-01-01T00:00:00Z'))).toBe('2026-01-14T22:00:00.000Z');
    // …and in its winter, UTC+10
    expect(due({ localTime: '09:00', date: '2026-07-15' }, 'Australia/Sydney', 'j', 'd', at('2026-01-01T00:00:00Z'))).toBe('2026-07-14T23:00:00.000Z');
  });

  it('reads a local time in a half-hour zone (Asia/Kolkata, UTC+05:30)', () => {
    expect(due({ localTime: '09:00', date: '2026-03-10' }, 'Asia/Kolkata', 'j', 'd', at('2026-01-01T00:00:00Z'))).toBe('2026-03-10T03:30:00.000Z');
  });

  it('moves a time inside a DST gap forward by the gap (New York 02:30 on spring-forward day → 03:30 EDT)', () => {
    expect(due({ localTime: '02:30', date: '2026-03-08' }, 'America/New_York', 'j', 'd', at('2026-01-01T00:00:00Z'))).toBe('2026-03-08T07:30:00.000Z');
    // Sydney's gap is in October: 02:30 → 03:30 AEDT (UTC+11)
    expect(due({ localTime: '02:30', date: '2026-10-04' }, 'Australia/Sydney', 'j', 'd', at('2026-01-01T00:00:00Z'))).toBe('2026-10-03T16:30:00.000Z');
  });

  it('takes the first occurrence of a time repeated by a DST overlap', () => {
    // New York 01:30 on fall-back day happens at 05:30Z (EDT) and 06:30Z (EST)
    expect(due({ localTime: '01:30', date: '2026-11-01' }, 'America/New_York', 'j', 'd', at('2026-01-01T00:00:00Z'))).toBe('2026-11-01T05:30:00.000Z');
    // Berlin 02:30 on 25 Oct happens at 00:30Z (CEST) and 01:30Z (CET)
    expect(due({ localTime: '02:30', date: '2026-10-25' }, 'Europe/Berlin', 'j', 'd', at('2026-01-01T00:00:00Z'))).toBe('2026-10-25T00:30:00.000Z');
    // Sydney 02:30 on 5 Apr happens at 15:30Z (AEDT) and 16:30Z (AEST)
    expect(due({ localTime: '02:30', date: '2026-04-05' }, 'Australia/Sydney', 'j', 'd', at('2026-01-01T00:00:00Z'))).toBe('2026-04-04T15:30:00.000Z');
  });

  it('without a date: today if the local time is still ahead in the device zone, else tomorrow', () => {
    const now = at('2026-05-20T02:00:00Z'); // 07:30 in Kolkata, 12:00 in Sydney
    expect(due({ localTime: '09:00' }, 'Asia/Kolkata', 'j', 'd', now)).toBe('2026-05-20T03:30:00.000Z');
    expect(due({ localTime: '09:00' }, 'Australia/Sydney', 'j', 'd', now)).toBe('2026-05-20T23:00:00.000Z');
  });

  it('without a date, in a DST overlap: the next occurrence today, the second when the first has passed', () => {
    // New York, 1 Nov 2026: 01:00–02:00 happens twice, EDT (05:00Z–06:00Z) then EST (06:00Z–07:00Z); 01:30 is 05:30Z and 06:30Z.
    const ny = (from: string) => due({ localTime: '01:30' }, 'America/New_York', 'j', 'd', at(from));
    expect(ny('2026-11-01T04:00:00Z')).toBe('2026-11-01T05:30:00.000Z'); // 00:00 EDT: the first
    expect(ny('2026-11-01T05:40:00Z')).toBe('2026-11-01T06:30:00.000Z'); // 01:40 EDT, the first passed: the second
    expect(ny('2026-11-01T06:10:00Z')).toBe('2026-11-01T06:30:00.000Z'); // 01:10 EST, the second pass: 20 minutes away, not tomorrow
    expect(ny('2026-11-01T06:30:00Z')).toBe('2026-11-01T06:30:00.000Z'); // at it
    expect(ny('2026-11-01T06:40:00Z')).toBe('2026-11-02T06:30:00.000Z'); // both passed: tomorrow
    // Berlin, 25 Oct 2026: 02:30 is 00:30Z (CEST) and 01:30Z (CET); accepted at 02:45 CEST.
    expect(due({ localTime: '02:30' }, 'Europe/Berlin', 'j', 'd', at('2026-10-25T00:45:00Z'))).toBe('2026-10-25T01:30:00.000Z');
    // With a date, the first occurrence still (here past, so due at once).
    expect(due({ localTime: '01:30', date: '2026-11-01' }, 'America/New_York', 'j', 'd', at('2026-11-01T06:10:00Z'))).toBe('2026-11-01T05:30:00.000Z');
  });

  it('without a date, in a DST gap: today, moved forward by the gap, while that is still ahead', () => {
    // New York, 8 Mar 2026: 02:00 EST jumps to 03:00 EDT (07:00Z); 02:30 moves to 03:30 EDT, 07:30Z.
    const ny = (from: string) => due({ localTime: '02:30' }, 'America/New_York', 'j', 'd', at(from));
    expect(ny('2026-03-08T06:50:00Z')).toBe('2026-03-08T07:30:00.000Z'); // 01:50 EST
    expect(ny('2026-03-08T07:10:00Z')).toBe('2026-03-08T07:30:00.000Z'); // 03:10 EDT, after the gap: 03:30 is still ahead
    expect(ny('2026-03-08T07:40:00Z')).toBe('2026-03-09T06:30:00.000Z'); // 03:40 EDT: tomorrow's 02:30 EDT
  });

  // America/Nuuk's clocks go from Saturday 28 March 2026 23:00 (−02) to Sunday 00:00 (−01). A job
  // accepted on the Friday at 23:13 was due on the Sunday: "tomorrow" was read as Saturday 23:13,
  // which does not exist and became Sunday 00:13, and with the 25 h ttl usage.md advises the push expired.
  it('without a date, on the eve of a DST gap at midnight: tomorrow is the next calendar day (Nuuk)', () => {
    expect(due({ localTime: '09:00' }, 'America/Nuuk', 'j', 'd', at('2026-03-28T01:13:00Z'))).toBe('2026-03-28T11:00:00.000Z'); // Sat 09:00 −02
    expect(due({ localTime: '09:00' }, 'America/Scoresbysund', 'j', 'd', at('2026-03-28T01:13:00Z'))).toBe('2026-03-28T11:00:00.000Z'); // the same clocks since 2024
  });

  it('with a date in the past, is due at once (the instant is in the past)', () => {
    const now = at('2026-05-20T12:00:00Z');
    expect(resolveDeliverAt({ localTime: '09:00', date: '2026-05-20' }, 'UTC', 'j', 'd', now).dueAt.getTime()).toBeLessThan(now.getTime());
  });

  it('falls back to UTC for an unknown or missing zone and says so', () => {
    const now = at('2026-05-20T00:00:00Z');
    expect(resolveDeliverAt({ localTime: '09:00' }, 'Mars/Olympus_Mons', 'j', 'd', now)).toEqual({ dueAt: at('2026-05-20T09:00:00Z'), timezoneFallback: true });
    expect(resolveDeliverAt({ localTime: '09:00' }, null, 'j', 'd', now).timezoneFallback).toBe(true);
    expect(resolveDeliverAt({ localTime: '09:00' }, 'UTC', 'j', 'd', now).timezoneFallback).toBe(false);
    // Zones luxon reads but the doors refuse (stored before they checked): the server's own zone, a fixed offset.
    for (const zone of ['local', 'system', 'UTC+3']) {
      expect(resolveDeliverAt({ localTime: '09:00' }, zone, 'j', 'd', now)).toEqual({ dueAt: at('2026-05-20T09:00:00Z'), timezoneFallback: true });
    }
  });

  it('jitter is deterministic per (job, device), inside the window, and spreads devices over it', () => {
    const now = at('2026-05-20T00:00:00Z');
    const spec = { localTime: '08:30', jitter: 'PT30M' } as const;
    const start = Date.parse('2026-05-20T03:00:00Z'); // 08:30 in Kolkata
    const offsets = Array.from({ length: 1000 }, (_, i) => resolveDeliverAt(spec, 'Asia/Kolkata', 'job-1', `dev-${i}`, now).dueAt.getTime() - start);
    expect(Math.min(...offsets)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...offsets)).toBeLessThan(30 * 60_000);
    expect(Math.max(...offsets) - Math.min(...offsets)).toBeGreaterThan(25 * 60_000);
    const again = resolveDeliverAt(spec, 'Asia/Kolkata', 'job-1', 'dev-7', now).dueAt.getTime() - start;
    expect(again).toBe(offsets[7]);
    expect(resolveDeliverAt(spec, 'Asia/Kolkata', 'job-2', 'dev-7', now).dueAt.getTime() - start).not.toBe(offsets[7]);
  });

  it('cuts a jitter window short at the expiry, so every device whose local time comes first gets a time before it', () => {
    // 09:00 in Berlin is 07:00Z; a window of an hour would run to 08:00Z, the push expires at 07:30Z.
    const spec = { localTime: '09:00', date: '2026-06-01', jitter: 'PT1H' } as const;
    const from = at('2026-05-01T00:00:00Z');
    const start = Date.parse('2026-06-01T07:00:00Z');
    const expiry = at('2026-06-01T07:30:00Z');
    const dues = Array.from({ length: 1000 }, (_, i) => resolveDeliverAt(spec, 'Europe/Berlin', 'job-1', `dev-${i}`, from, expiry).dueAt.getTime());
    expect(Math.min(...dues)).toBeGreaterThanOrEqual(start);
    // Ending a minute before the expiry (a tenth of the 30 minutes left, at most a minute): the
    // last ones still have time to travel through the store and a queue.
    expect(Math.max(...dues)).toBeLessThan(expiry.getTime() - 60_000);
    expect(Math.max(...dues) - Math.min(...dues)).toBeGreaterThan(25 * 60_000); // spread over what is left of the window
    // Deterministic: a replay gives each device the same instant.
    expect(resolveDeliverAt(spec, 'Europe/Berlin', 'job-1', 'dev-7', from, expiry).dueAt.getTime()).toBe(dues[7]);
    // A window that ends over a minute before the expiry is not touched.
    const roomy = (i: number, e?: Date) => resolveDeliverAt(spec, 'Europe/Berlin', 'job-1', `dev-${i}`, from, e).dueAt.getTime();
    for (let i = 0; i < 50; i++) expect(roomy(i, at('2026-06-01T08:05:00Z'))).toBe(roomy(i));
    // A local time at or after the expiry keeps its window: the push expires before it is due, as before.
    for (let i = 0; i < 50; i++) expect(roomy(i, at('2026-06-01T06:00:00Z'))).toBe(roomy(i));
    expect(roomy(0, at('2026-06-01T07:00:00Z'))).toBe(roomy(0));
  });
});
