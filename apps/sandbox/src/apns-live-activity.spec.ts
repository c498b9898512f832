import { describe, expect, it } from 'vitest';
import { checkLiveActivityAps } from './apns-live-activity.ts';

const T = 1_700_000_000;

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

  // Apple's response table lists no reason for these: APNs' answer is undocumented, so the sandbox
  // accepts (validateApnsRequest answers 200) and names the broken rule in the record's warnings.
  it.each<[string, Record<string, unknown>, string[]]>([
    ['no event', { timestamp: T, 'content-state': {} }, ['aps.event must be "start", "update" or "end"']],
    ['an unknown event', { event: 'pause', timestamp: T, 'content-state': {} }, ['aps.event must be "start", "update" or "end"']],
    ['no timestamp', { event: 'update', 'content-state': {} }, ['aps.timestamp (UNIX epoch seconds) is required']],
    ['a string timestamp', { event: 'update', timestamp: String(T), 'content-state': {} }, ['aps.timestamp (UNIX epoch seconds) is required']],
    ['an update without content-state', { event: 'update', timestamp: T }, ['aps.content-state is required for a Live Activity update']],
    [
      'a start without content-state',
      { event: 'start', timestamp: T, 'attributes-type': 'A', attributes: {}, alert: 'a' },
      ['aps.content-state is required for a Live Activity start'],
    ],
    ['a start without attributes', { event: 'start', timestamp: T, 'content-state': {}, alert: 'a' }, ['a Live Activity start needs aps.attributes-type and aps.attributes']],
    ['a non-dictionary content-state', { event: 'end', timestamp: T, 'content-state': 'done' }, ['aps.content-state must be a dictionary']],
    ['a string dismissal-date', { event: 'end', timestamp: T, 'dismissal-date': 'tomorrow' }, ['aps.dismissal-date must be UNIX epoch seconds']],
    ['a string stale-date', { event: 'update', timestamp: T, 'content-state': {}, 'stale-date': 'soon' }, ['aps.stale-date must be UNIX epoch seconds']],
    [
      'several rules at once',
      { event: 'start', timestamp: 'now' },
      [
        'aps.timestamp (UNIX epoch seconds) is required',
        'aps.content-state is required for a Live Activity start',
        'a Live Activity start needs aps.attributes-type and aps.attributes',
        'a Live Activity start without aps.alert: the device starts no activity',
      ],
    ],
  ])('accepts %s, with a warning naming the rule', (_name, aps, warnings) => {
    expect(checkLiveActivityAps(aps)).toEqual({ warnings });
  });

  it("notes a sound beside the alert instead of in it: a Live Activity's alert carries its sound", () => {
    const update = { event: 'update', timestamp: T, 'content-state': {} };
    expect(checkLiveActivityAps({ ...update, alert: { title: 'Goal' }, sound: 'goal.caf' }).warnings).toEqual([
      "a Live Activity's sound goes in aps.alert, with its title and body (Apple's ActivityKit payload), not in aps.sound",
    ]);
    expect(checkLiveActivityAps({ ...update, alert: { title: 'Goal', sound: 'goal.caf' } }).warnings).toEqual([]);
  });

  it('notes a dismissal-date on an update', () => {
    expect(checkLiveActivityAps({ event: 'update', timestamp: T, 'content-state': {}, 'dismissal-date': T }).warnings).toEqual([
      'aps.dismissal-date only applies to an end event',
    ]);
  });
});
