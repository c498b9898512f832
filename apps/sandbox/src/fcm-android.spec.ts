import { describe, expect, it } from 'vitest';
import { checkAndroid } from './fcm-android.ts';

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
