import { describe, expect, it } from 'vitest';
import { androidWarnings, checkAndroid } from './fcm-android.ts';

const messageOf = (v: unknown): string | undefined => checkAndroid(v)?.error.body.error.message;

describe('checkAndroid', () => {
  it('accepts the AndroidConfig firebase-admin sends', () => {
    expect(checkAndroid({ priority: 'high', ttl: '3600s', collapse_key: 'c', notification: { sound: 'default', notification_count: 2 }, data: { k: 'v' } })).toBeUndefined();
    expect(checkAndroid({ restrictedPackageName: 'com.x', directBootOk: true, fcm_options: { analytics_label: 'l' } })).toBeUndefined();
  });

  it('caps ttl at 4 weeks (2,419,200 s) and takes 0s', () => {
    expect(checkAndroid({ ttl: '2419200s' })).toBeUndefined();
    expect(checkAndroid({ ttl: '0s' })).toBeUndefined();
    expect(messageOf({ ttl: '2419200.5s' })).toBe(
      `Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), "2419200.5s": the maximum time to live is 4 weeks (2419200s)`,
    );
    expect(messageOf({ ttl: 3600 })).toBe(`Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), 3600`);
  });

  it.each<[string, unknown, RegExp]>([
    ['not an object', 'high', /'message.android' \(type.googleapis.com\/google.firebase.fcm.v1.AndroidConfig\)/],
    ['an unknown field', { delay_while_idle: true }, /Unknown name "delay_while_idle" at 'message.android'/],
    ['a bad priority', { priority: 'urgent' }, /message.android.priority/],
    ['a numeric collapse key', { collapse_key: 5 }, /'message.android.collapse_key' \(TYPE_STRING\)/],
    ['a string flag', { direct_boot_ok: 'yes' }, /'message.android.direct_boot_ok' \(TYPE_BOOL\)/],
    ['non-string data', { data: { n: 1 } }, /message.android.data\[0\].value/],
  ])('rejects %s', (_name, value, pattern) => {
    expect(messageOf(value)).toMatch(pattern);
  });
});

describe('androidWarnings', () => {
  it('warns of an android.notification with no text: a blank tray entry on the device', () => {
    expect(androidWarnings({ android: { notification: { notification_count: 3 } } })).toEqual([expect.stringMatching(/blank notification/)]);
    expect(androidWarnings({ android: { notification: { sound: 'default' } }, notification: { image: 'https://x/y.png' } })).toHaveLength(1);
  });

  it('is quiet when the notification or android.notification has text, and for data messages', () => {
    expect(androidWarnings({ notification: { body: 'hi' }, android: { notification: { notification_count: 3 } } })).toEqual([]);
    expect(androidWarnings({ android: { notification: { bodyLocKey: 'K' } } })).toEqual([]);
    expect(androidWarnings({ android: { data: { herald_badge: '3' } } })).toEqual([]);
  });
});
