import { describe, expect, it } from 'vitest';
import { checkLiveActivityAps } from './apns-live-activity.ts';

const T = 1_700_000_000;
const reasonOf = (aps: Record<string, unknown>): string | undefined => checkLiveActivityAps(aps).rejection?.reason;

describe('checkLiveActivityAps', () => {
  it('accepts update, end and start as Apple documents them', () => {
    expect(checkLiveActivityAps({ event: 'update', timestamp: T, 'content-state': { eta: 5 }, 'stale-date': T + 60 })).toEqual({ warnings: [] });
    expect(checkLiveActivityAps({ event: 'end', timestamp: T, 'dismissal-date': T + 3600 })).toEqual({ warnings: [] });
    expect(checkLiveActivityAps({ event: 'end', timestamp: T, 'content-state': { eta: 0 } })).toEqual({ warnings: [] });
    const start = { event: 'start', timestamp: T, 'content-state': { eta: 5 }, 'attributes-type': 'RideAttributes', attributes: { rider: 'a' }, alert: { title: 'Ride booked' } };
    expect(checkLiveActivityAps(start)).toEqual({ warnings: [] });
  });

  it('accepts a start without an alert, as APNs does (200), and notes that the device starts nothing', () => {
    const silent = { event: 'start', timestamp: T, 'content-state': { eta: 5 }, 'attributes-type': 'RideAttributes', attributes: { rider: 'a' } };
    expect(checkLiveActivityAps(silent)).toEqual({ warnings: ['a Live Activity start without aps.alert: the device starts no activity'] });
  });

  it.each<[string, Record<string, unknown>]>([
    ['no event', { timestamp: T, 'content-state': {} }],
    ['an unknown event', { event: 'pause', timestamp: T, 'content-state': {} }],
    ['no timestamp', { event: 'update', 'content-state': {} }],
    ['a string timestamp', { event: 'update', timestamp: String(T), 'content-state': {} }],
    ['an update without content-state', { event: 'update', timestamp: T }],
    ['a start without content-state', { event: 'start', timestamp: T, 'attributes-type': 'A', attributes: {} }],
    ['a start without attributes', { event: 'start', timestamp: T, 'content-state': {} }],
    ['a non-dictionary content-state', { event: 'end', timestamp: T, 'content-state': 'done' }],
    ['a string dismissal-date', { event: 'end', timestamp: T, 'dismissal-date': 'tomorrow' }],
  ])('refuses %s with BadPayload', (_name, aps) => {
    expect(reasonOf(aps)).toBe('BadPayload');
  });

  it('notes a dismissal-date on an update', () => {
    expect(checkLiveActivityAps({ event: 'update', timestamp: T, 'content-state': {}, 'dismissal-date': T }).warnings).toEqual([
      'aps.dismissal-date only applies to an end event',
    ]);
  });
});
