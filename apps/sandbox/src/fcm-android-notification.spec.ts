import { describe, expect, it } from 'vitest';
import { checkAndroidNotification } from './fcm-android-notification.ts';

const AT = 'message.android.notification';
const messageOf = (v: unknown): string | undefined => checkAndroidNotification(v, AT)?.error.body.error.message;

describe('checkAndroidNotification', () => {
  it('accepts the documented fields with their types, by proto or JSON name', () => {
    const full = {
      title: 't', body: 'b', icon: 'ic', color: '#A1b2C3', sound: 'default', tag: 'tg', click_action: 'OPEN', body_loc_key: 'k',
      body_loc_args: ['a'], title_loc_key: 'tk', titleLocArgs: ['b'], channel_id: 'ch', ticker: 'tick', sticky: false,
      event_time: '2024-05-01T10:00:00.5Z', local_only: true, notification_priority: 'PRIORITY_HIGH', default_sound: true,
      default_vibrate_timings: false, default_light_settings: false, vibrate_timings: ['0.5s', '1s'], visibility: 'PUBLIC',
      notificationCount: 3, light_settings: { color: { red: 1 } }, image: 'https://x/y.png', bypass_proxy_notification: true, proxy: 'DENY',
    };
    expect(checkAndroidNotification(full, AT)).toBeUndefined();
  });

  it.each<[string, unknown, string]>([
    ['an unknown field', { badge: 1 }, `Invalid JSON payload received. Unknown name "badge" at '${AT}': Cannot find field.`],
    ['a colour name', { color: 'red' }, `Invalid value at '${AT}.color' (TYPE_STRING), "red": color must be in #rrggbb format`],
    ['a short colour', { color: '#fff' }, `Invalid value at '${AT}.color' (TYPE_STRING), "#fff": color must be in #rrggbb format`],
    ['a fractional count', { notification_count: 1.5 }, `Invalid value at '${AT}.notification_count' (TYPE_INT32), 1.5`],
    ['a numeric title', { title: 1 }, `Invalid value at '${AT}.title' (TYPE_STRING), 1`],
    ['loc args not strings', { body_loc_args: [1] }, `Invalid value at '${AT}.body_loc_args[0]' (TYPE_STRING), 1`],
    ['an unknown visibility', { visibility: 'HIDDEN' }, `Invalid value at '${AT}.visibility' (type.googleapis.com/google.firebase.fcm.v1.AndroidNotification.Visibility), "HIDDEN"`],
    ['a bad vibrate timing', { vibrate_timings: ['1000'] }, `Invalid value at '${AT}.vibrate_timings[0]' (type.googleapis.com/google.protobuf.Duration), "1000"`],
    ['a bad event time', { event_time: 'yesterday' }, `Invalid value at '${AT}.event_time' (type.googleapis.com/google.protobuf.Timestamp), "yesterday"`],
    ['not an object', 'hi', `Invalid value at '${AT}' (type.googleapis.com/google.firebase.fcm.v1.AndroidNotification), "hi"`],
  ])('rejects %s', (_name, value, message) => {
    expect(messageOf(value)).toBe(message);
  });
});
