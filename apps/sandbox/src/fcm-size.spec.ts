import { describe, expect, it } from 'vitest';
import { checkPayloadSize, fcmPayloadBytes } from './fcm-size.ts';

describe('FCM payload size (Google: "Maximum payload for both message types is 4096 bytes")', () => {
  it('counts the keys and values of notification, android.notification and the data, in UTF-8 bytes', () => {
    expect(fcmPayloadBytes({ notification: { title: 'é' }, android: { notification: { notification_count: 12 } }, data: { k: 'v' } })).toBe(5 + 2 + 18 + 2 + 2);
  });

  it('counts android.data instead of data when present: it is what an Android device receives', () => {
    expect(fcmPayloadBytes({ data: { k: 'v'.repeat(100) }, android: { data: { k: 'v' } } })).toBe(2);
  });

  it('takes 4096 bytes and refuses 4097, whichever part they are in', () => {
    expect(checkPayloadSize({ data: { k: 'v'.repeat(4095) } })).toBeUndefined();
    expect(checkPayloadSize({ data: { k: 'v'.repeat(4096) } })).toMatchObject({ ok: false, error: { status: 400 } });
    expect(checkPayloadSize({ notification: { body: 'b'.repeat(2000) }, android: { data: { k: 'v'.repeat(2093) } } })).toBeDefined();
  });
});
