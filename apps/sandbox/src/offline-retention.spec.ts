import { describe, expect, it } from 'vitest';
import { apnsRetention, appleRetention, FCM_ANDROID_LIMITS, FCM_MAX_TTL_SECONDS, fcmRetention } from './offline-retention.ts';

const NOW = Date.UTC(2030, 0, 1);
const DAY = 86_400_000;
const fcm = (message: Record<string, unknown>) => ({ message: { token: 't', ...message } });

describe('appleRetention / apnsRetention', () => {
  it('does not store apns-expiration 0 (deliver once)', () => {
    expect(apnsRetention({ 'apns-topic': 'a', 'apns-expiration': '0' }, NOW)).toEqual({ stored: false, why: expect.stringMatching(/0/) });
  });

  it('stores until a future expiration, one slot per topic', () => {
    const until = NOW + 3_600_000;
    expect(apnsRetention({ 'apns-topic': 'com.a', 'apns-expiration': String(until / 1000) }, NOW)).toEqual({ stored: true, untilMs: until, slot: 'topic:com.a', why: expect.stringMatching(/one notification stored per app/) });
  });

  it('does not store an expiration already past', () => {
    expect(appleRetention(String(NOW / 1000 - 1), 's', NOW)).toMatchObject({ stored: false });
  });

  it('stores 30 days at most, and 30 days without the header', () => {
    expect(appleRetention(String((NOW + 90 * DAY) / 1000), 's', NOW)).toMatchObject({ stored: true, untilMs: NOW + 30 * DAY, slot: 's' });
    expect(appleRetention(undefined, 's', NOW)).toMatchObject({ stored: true, untilMs: NOW + 30 * DAY, slot: 's' });
  });
});

describe('fcmRetention', () => {
  it('Android: ttl 0s is now or never', () => {
    expect(fcmRetention(fcm({ android: { ttl: '0s' } }), 'android', NOW)).toMatchObject({ stored: false });
  });

  it('Android: keeps a data message for the ttl, 4 weeks without one, replacing by collapse key, within FCM\'s limits', () => {
    expect(fcmRetention(fcm({ data: { a: '1' }, android: { ttl: '60s', collapse_key: 'c' } }), 'android', NOW)).toEqual({
      stored: true,
      untilMs: NOW + 60_000,
      slot: 'collapse:c',
      why: 'data message with collapse_key "c": the newest of its key kept',
      limits: FCM_ANDROID_LIMITS,
    });
    expect(fcmRetention(fcm({ data: { a: '1' } }), 'android', NOW)).toEqual({
      stored: true,
      untilMs: NOW + FCM_MAX_TTL_SECONDS * 1000,
      slot: undefined,
      why: expect.stringMatching(/non-collapsible/),
      limits: FCM_ANDROID_LIMITS,
    });
    expect(FCM_MAX_TTL_SECONDS).toBe(2_419_200);
    expect(FCM_ANDROID_LIMITS).toEqual({ collapseKeys: 4, nonCollapsible: 100 });
  });

  it('Android: a notification message is always collapsible under the app\'s package name, its collapse_key ignored', () => {
    const shared = fcmRetention(fcm({ notification: { title: 't' }, android: { collapse_key: 'c' } }), 'android', NOW);
    const androidOnly = fcmRetention(fcm({ android: { notification: { body: 'b' } } }), 'android', NOW);
    const withoutKey = fcmRetention(fcm({ notification: { title: 't' } }), 'android', NOW);
    for (const r of [shared, androidOnly, withoutKey]) {
      expect(r).toMatchObject({ stored: true, slot: 'package', why: expect.stringMatching(/notification message: always collapsible, collapse_key ignored/) });
    }
  });

  it("iOS through FCM: Apple's apns-expiration rule, one per app", () => {
    const withExpiration = (e: string) => fcm({ android: { ttl: '0s' }, apns: { headers: { 'apns-expiration': e } } });
    expect(fcmRetention(withExpiration('0'), 'ios', NOW)).toMatchObject({ stored: false });
    expect(fcmRetention(withExpiration(String(NOW / 1000 + 60)), 'ios', NOW)).toMatchObject({ stored: true, untilMs: NOW + 60_000, slot: 'app' });
    expect(fcmRetention(fcm({ android: { ttl: '0s' } }), 'ios', NOW)).toMatchObject({ stored: true, untilMs: NOW + 30 * DAY, slot: 'app' });
  });
});
