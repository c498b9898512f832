import { timeZoneProblem } from '@herald/contracts';
import { IANAZone } from 'luxon';
import { describe, expect, it } from 'vitest';
import { resolveDeliverAt } from './resolve-deliver-at.ts';

/**
 * The registration door (contracts, Intl) and the deschedulers (this lib, luxon) must agree on which
 * zones exist: a zone the door accepts must never fall back to UTC here.
 */
const ZONES = [
  'Europe/Berlin', 'europe/berlin', 'America/New_York', 'Asia/Kolkata', 'Asia/Calcutta', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Pacific/Chatham',
  'America/St_Johns', 'UTC', 'Etc/UTC', 'GMT', 'Etc/GMT-14', 'US/Pacific', 'Europe/Kyiv', 'Europe/Kiev',
  'Mars/Base', 'Mars/Olympus_Mons', 'Europe/Berln', 'Nowhere', 'Etc/GMT+15',
];

describe('zone agreement between registration and the deschedulers', () => {
  it.each(ZONES)('%j: accepted at the door exactly when luxon knows it', (zone) => {
    expect(timeZoneProblem(zone) === undefined).toBe(IANAZone.isValidZone(zone));
  });

  it.each(ZONES.filter((z) => timeZoneProblem(z) === undefined))('%j: accepted, so a local time resolves in it, not in UTC', (zone) => {
    const r = resolveDeliverAt({ localTime: '09:00', date: '2026-07-01' }, zone, 'job', 'device', new Date('2026-06-01T00:00:00Z'));
    expect(r.timezoneFallback).toBe(false);
  });

  it('luxon accepts specifiers that are not zones; the door refuses them', () => {
    for (const s of ['local', 'system', 'UTC+3']) expect(timeZoneProblem(s)).toBeDefined();
  });
});
