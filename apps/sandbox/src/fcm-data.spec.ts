import { describe, expect, it } from 'vitest';
import { checkData, checkStringMap, isReservedDataKey } from './fcm-data.ts';

const messageOf = (p: ReturnType<typeof checkData>): string | undefined => p?.error.body.error.message;

describe('isReservedDataKey', () => {
  it('reserves "from", "message_type" and words starting with "google" or "gcm" (FCM v1 reference)', () => {
    for (const key of ['from', 'message_type', 'google.c.a.e', 'googleId', 'gcm.notification.title', 'gcmx']) expect(isReservedDataKey(key)).toBe(true);
    for (const key of ['From', 'sender', 'notification', 'message', 'collapse_key', 'my_google']) expect(isReservedDataKey(key)).toBe(false);
  });
});

describe('checkData', () => {
  it('wants string values and no reserved keys', () => {
    expect(checkData({ k: 'v', notification: 'n' })).toBeUndefined();
    expect(messageOf(checkData({ k: 'v', n: 1 }))).toBe("Invalid value at 'message.data[1].value' (TYPE_STRING), 1");
    expect(messageOf(checkData({ k: 'v', message_type: 'x' }))).toMatch(/^Invalid data payload key: message_type \(at 'message.data'\)/);
    expect(messageOf(checkData({ 'google.sent_time': '1' }))).toMatch(/Invalid data payload key: google.sent_time/);
  });

  it('names the path of a map that is not an object', () => {
    expect(checkStringMap(['a'], 'message.apns.headers')?.error.body.error.message).toBe(
      `Invalid value at 'message.apns.headers' (type.googleapis.com/google.protobuf.Map), ["a"]`,
    );
  });
});
