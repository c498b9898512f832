import { describe, expect, it } from 'vitest';
import { checkAps } from './apns-aps-rules.ts';

describe('checkAps', () => {
  // Apple's response table lists no reason for these: accepted, the warning names the rule broken.
  it('accepts a background push without content-available = 1, and notes it', () => {
    expect(checkAps('background', {})).toEqual({ warnings: ['a background push needs aps.content-available = 1'] });
    expect(checkAps('background', { 'content-available': true })).toEqual({ warnings: ['a background push needs aps.content-available = 1'] });
    expect(checkAps('background', { 'content-available': 1 })).toEqual({ warnings: [] });
  });

  it('accepts alert, sound or badge in a background push, and notes it', () => {
    expect(checkAps('background', { 'content-available': 1, alert: 'hi', sound: 'default' })).toEqual({
      warnings: ['a background push must not contain aps.alert, aps.sound'],
    });
    expect(checkAps('background', { badge: 1, 'thread-id': 't' })).toEqual({
      warnings: [
        'a background push needs aps.content-available = 1',
        'a background push must not contain aps.badge',
        'background aps should include only content-available (also has thread-id)',
      ],
    });
  });

  it('notes other aps keys in a background push', () => {
    expect(checkAps('background', { 'content-available': 1, 'thread-id': 't' })).toEqual({
      warnings: ['background aps should include only content-available (also has thread-id)'],
    });
  });

  it('notes an alert push that shows nothing', () => {
    expect(checkAps('alert', { 'content-available': 1 }).warnings).toEqual(['alert push with no aps.alert, aps.sound or aps.badge: the phone shows nothing']);
    expect(checkAps('alert', { badge: 0 }).warnings).toEqual([]);
    expect(checkAps('alert', { sound: 'default' }).warnings).toEqual([]);
  });

  it("notes a critical alert whose sound is a file name, not Apple's sound dictionary", () => {
    expect(checkAps('alert', { alert: 'x', sound: 'alarm.caf', 'interruption-level': 'critical' }).warnings).toEqual([
      "a critical alert's aps.sound is a file name: Apple asks for the sound dictionary { critical: 1, name, volume } (played as a regular sound otherwise)",
    ]);
    expect(checkAps('alert', { alert: 'x', sound: { critical: 1, name: 'alarm.caf' }, 'interruption-level': 'critical' }).warnings).toEqual([]);
    expect(checkAps('alert', { alert: 'x', sound: 'bell.caf', 'interruption-level': 'time-sensitive' }).warnings).toEqual([]);
  });

  it('leaves other push types alone', () => {
    expect(checkAps('voip', {})).toEqual({ warnings: [] });
    expect(checkAps(undefined, { alert: 'x', 'content-available': 1 })).toEqual({ warnings: [] });
  });
});
