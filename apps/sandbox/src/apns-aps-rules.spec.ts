import { describe, expect, it } from 'vitest';
import { checkAps } from './apns-aps-rules.ts';

const BAD = { ok: false, status: 400, reason: 'BadPayload' };

describe('checkAps', () => {
  it('wants content-available = 1 in a background push', () => {
    expect(checkAps('background', {})).toEqual({ rejection: BAD, warnings: ['a background push needs aps.content-available = 1'] });
    expect(checkAps('background', { 'content-available': true })).toMatchObject({ rejection: BAD });
    expect(checkAps('background', { 'content-available': 1 })).toEqual({ warnings: [] });
  });

  it('refuses alert, sound or badge in a background push', () => {
    expect(checkAps('background', { 'content-available': 1, alert: 'hi', sound: 'default' })).toEqual({
      rejection: BAD,
      warnings: ['a background push must not contain aps.alert, aps.sound'],
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

  it('leaves other push types alone', () => {
    expect(checkAps('voip', {})).toEqual({ warnings: [] });
    expect(checkAps(undefined, { alert: 'x', 'content-available': 1 })).toEqual({ warnings: [] });
  });
});
