import { describe, expect, it } from 'vitest';
import { buildFcmMessage, type FcmMessage } from './fcm-message.ts';
import { fcmForwardedToIosProblem, fcmMessageProblem, fcmPayloadBytes } from './fcm-rules.ts';
import { testPush } from './test-pushes.ts';

const message = (over: Record<string, unknown> = {}): FcmMessage => ({ ...buildFcmMessage(testPush('fcm')), ...over }) as FcmMessage;

describe('Google\'s Message rules (PROVIDER-RULES.md, FCM rows)', () => {
  it('accepts what Herald builds for ordinary content', () => {
    expect(fcmMessageProblem(message())).toBeUndefined();
  });

  it('data: reserved keys ("from", "message_type", google.*, gcm*) are refused; values are strings', () => {
    for (const key of ['from', 'message_type', 'google.c.a', 'gcm.notification.x', 'gcmx']) {
      expect(fcmMessageProblem(message({ data: { [key]: 'v' } }))).toMatch(/reserves/);
    }
    expect(fcmMessageProblem(message({ data: { n: 1 } }))).toMatch(/must be a string/);
    expect(fcmMessageProblem(message({ data: { fromage: 'ok' } }))).toBeUndefined();
  });

  it('android.ttl: a Duration of at most 4 weeks', () => {
    const m = message();
    expect(fcmMessageProblem({ ...m, android: { ...m.android, ttl: '2419200s' } })).toBeUndefined();
    expect(fcmMessageProblem({ ...m, android: { ...m.android, ttl: '3455999s' } })).toMatch(/4-week maximum/);
    expect(fcmMessageProblem({ ...m, android: { ...m.android, ttl: '1h' } })).toMatch(/Duration/);
    expect(fcmMessageProblem({ ...m, android: { ...m.android, ttl: '2419200.5s' } })).toMatch(/2419200.5 s, beyond FCM's 4-week maximum/);
  });

  it('android: AndroidConfig and AndroidNotification as Google types them; one wrong field refuses the whole message, its iOS part included', () => {
    const m = message();
    const android = (over: Record<string, unknown>) => fcmMessageProblem({ ...m, android: { ...m.android, ...over } });
    expect(android({ notification: { title: 't', subtitle: 'x' } })).toMatch(/^android.notification.subtitle is not a field of AndroidNotification/);
    expect(android({ priority: 'URGENT' })).toMatch(/^android.priority must be NORMAL or HIGH/);
    expect(android({ direct_boot_ok: 'yes' })).toMatch(/^android.direct_boot_ok must be true or false/);
    expect(android({ notification: { notification_count: 1.5 } })).toMatch(/^android.notification.notification_count must be a 32-bit integer/);
    expect(android({ notification: { visibility: 'HIDDEN' } })).toMatch(/^android.notification.visibility must be one of/);
    expect(android({ notification: { event_time: 'yesterday' } })).toMatch(/^android.notification.event_time must be an RFC 3339 timestamp/);
    expect(android({ notification: { body_loc_args: 'a' } })).toMatch(/^android.notification.body_loc_args must be a list/);
    expect(android({ channel: 'x' })).toMatch(/^android.channel is not a field of AndroidConfig/);
    // Object's own names are no fields either (before, `constructor` found Object's and the check threw).
    expect(android({ notification: { constructor: 'x', title: 't' } })).toMatch(/^android.notification.constructor is not a field of AndroidNotification/);
    expect(fcmMessageProblem(message({ webpush: { toString: 'x' } }))).toMatch(/^webpush.toString is not a field of WebpushConfig/);
    // Herald sets collapse_key itself: the JSON name of the same field would give it twice.
    expect(android({ collapse_key: 'k', collapseKey: 'other' })).toMatch(/^android.collapseKey sets android.collapse_key a second time/);
    expect(android({ collapseKey: '🔥' })).toMatch(/printable ASCII/);
    expect(
      android({
        priority: 'normal',
        direct_boot_ok: true,
        restrictedPackageName: 'com.example',
        notification: { title: 't', channel_id: 'c', notificationCount: 3, visibility: 'PRIVATE', event_time: '2026-01-01T00:00:00.5Z', vibrate_timings: ['0.5s'], light_settings: { color: {} } },
      }),
    ).toBeUndefined();
  });

  it('payload: 4096 bytes of notification + data + android.notification', () => {
    expect(fcmMessageProblem(message({ data: { blob: 'y'.repeat(4000) } }))).toBeUndefined();
    expect(fcmMessageProblem(message({ data: { blob: 'y'.repeat(4100) } }))).toMatch(/^payload too large: FCM message .* is \d+ bytes, the limit is 4096$/);
  });

  it("payload to iOS: a new job's count takes in the image FCM forwards as fcm_options.image and its gcm.message_id; a push accepted before is still sent", () => {
    const image = `https://cdn.example/${'i'.repeat(130)}.png`;
    const withData = (n: number, imageUrl?: string) => buildFcmMessage(testPush('fcm', { content: { title: 'T', data: { blob: 'y'.repeat(n) }, ...(imageUrl !== undefined && { imageUrl }) } }));
    // Filled to the byte as Herald counts it: the payload, FCM's message id, the image.
    const ios = (m: FcmMessage) => Buffer.byteLength(JSON.stringify({ ...m.data, ...m.apns.payload, 'gcm.message_id': '0'.repeat(19), ...(m.notification?.image !== undefined && { fcm_options: { image: m.notification.image } }) }));
    const room = 4096 - ios(withData(0, image));
    expect(fcmForwardedToIosProblem(withData(room, image))).toBeUndefined();
    expect(fcmForwardedToIosProblem(withData(room + 1, image))).toBe("payload too large: the APNs payload FCM forwards to iOS, with FCM's own keys, is 4097 bytes, the limit is 4096");
    // The image alone is what tips it: the same data without one goes.
    expect(fcmForwardedToIosProblem(withData(room + 1))).toBeUndefined();
    // The pushers' last check leaves FCM's keys out: work accepted before the count is sent, not parked.
    expect(fcmMessageProblem(withData(room + 1, image))).toBeUndefined();
  });

  // The counts are added up from their parts; each must be the merged object's JSON text to the byte.
  it('payload: counted to the byte as the JSON text of notification + data + android.notification', () => {
    const m = message({ notification: { title: 'Tï' }, data: { k: 'v', 'é': '"' } });
    const text = (n: unknown, d: unknown, a: unknown) => Buffer.byteLength(JSON.stringify({ notification: n ?? {}, data: d ?? {}, android: a ?? {} }));
    expect(fcmPayloadBytes(m)).toBe(text(m.notification, m.data, m.android.notification));
    const bare = { ...m, notification: undefined, data: undefined, android: { ...m.android, notification: undefined } } as unknown as FcmMessage;
    expect(fcmPayloadBytes(bare)).toBe(text(undefined, undefined, undefined));
    const replaced = { ...m, android: { ...m.android, data: { other: 'x'.repeat(10) } } };
    expect(fcmPayloadBytes(replaced)).toBe(text(m.notification, replaced.android.data, m.android.notification));
  });

  it('payload to iOS: the data and apns.payload FCM merges are counted as the merged JSON text, with a key in both or none', () => {
    const iosBytes = (m: FcmMessage) => Buffer.byteLength(JSON.stringify({ ...m.data, ...m.apns.payload }));
    // The filler goes in apns.payload, which reaches iOS only: Android's count stays under its limit.
    const withPayload = (data: Record<string, string> | undefined, payload: Record<string, unknown>) => {
      const m = buildFcmMessage(testPush('fcm', { content: { title: 'T', ...(data !== undefined && { data }) } }));
      return { ...m, apns: { ...m.apns, payload: { ...m.apns.payload, ...payload } } } as FcmMessage;
    };
    const cases: Array<[Record<string, string> | undefined, Record<string, unknown>]> = [
      [{ k: 'v', 'é': '"' }, {}],
      [{ k: 'v', 'é': '"' }, { k: "replaces the data's" }],
      [{ k: 'v', 7: 'an index-like key' }, { 3: 'another' }],
      [{}, {}],
      [undefined, {}],
    ];
    for (const [data, payload] of cases) {
      const room = 4096 - iosBytes(withPayload(data, { ...payload, fill: '' }));
      const over = withPayload(data, { ...payload, fill: 'y'.repeat(room + 1) });
      expect(iosBytes(over)).toBe(4097);
      expect(fcmMessageProblem(over)).toBe('payload too large: the APNs payload FCM forwards to iOS is 4097 bytes, the limit is 4096');
      expect(fcmMessageProblem(withPayload(data, { ...payload, fill: 'y'.repeat(room) }))).toBeUndefined();
    }
  });

  it('payload: android.data counts in place of data, as it replaces data on Android', () => {
    const m = message();
    expect(fcmMessageProblem({ ...m, android: { ...m.android, data: { blob: 'y'.repeat(4100) } } })).toMatch(/^payload too large: FCM message .* is 41\d\d bytes, the limit is 4096$/);
  });

  it('android.notification.color is #rrggbb', () => {
    const m = message();
    expect(fcmMessageProblem({ ...m, android: { ...m.android, notification: { color: 'red' } } })).toMatch(/#rrggbb/);
  });

  it('the apns block follows Apple: a background push to iOS at apns-priority 10 is refused', () => {
    const m = message();
    expect(fcmMessageProblem({ ...m, apns: { ...m.apns, headers: { 'apns-push-type': 'background', 'apns-priority': '10' } } })).toMatch(/priority 5/);
  });

  it("the apns block follows Apple: a push labelled background that shows something is refused (the notification reaches iOS as aps.alert)", () => {
    const shown = buildFcmMessage(testPush('fcm', { content: { title: 'Hi', fcm: { apns: { headers: { 'apns-push-type': 'background', 'apns-priority': '5' }, payload: { aps: { 'content-available': 1 } } } } } }));
    expect(fcmMessageProblem(shown)).toBe('apns: a background push must not carry aps.alert');
    const silent = buildFcmMessage(testPush('fcm', { content: { contentAvailable: true, data: { k: 'v' } } }));
    expect(silent.apns.headers['apns-push-type']).toBe('background');
    expect(fcmMessageProblem(silent)).toBeUndefined();
    expect(fcmMessageProblem({ ...silent, apns: { ...silent.apns, payload: { aps: { 'content-available': 1, badge: 2 } } } })).toBe('apns: a background push must not carry aps.badge');
  });

  it("content.fcm's apns headers replace Herald's whatever their case: one header each, in lower case", () => {
    const m = buildFcmMessage(testPush('fcm', { content: { title: 'Hi', fcm: { apns: { headers: { 'Apns-Priority': '5' } } } } }));
    expect(m.apns.headers['apns-priority']).toBe('5');
    expect(Object.keys(m.apns.headers).filter((h) => h.toLowerCase() === 'apns-priority')).toEqual(['apns-priority']);
  });

  it('a data message to Apple devices at apns-priority 10 is refused even when labelled alert (Google: data messages to Apple devices use 5)', () => {
    const m = buildFcmMessage(testPush('fcm', { content: { data: { k: 'v' } } }));
    expect(fcmMessageProblem({ ...m, apns: { ...m.apns, headers: { ...m.apns.headers, 'apns-push-type': 'alert', 'apns-priority': '10' } } })).toMatch(/must use apns-priority 5/);
  });

  it('collapse keys follow the 64-byte printable-ASCII rule', () => {
    const m = message();
    expect(fcmMessageProblem({ ...m, android: { ...m.android, collapse_key: '🔥' } })).toMatch(/printable ASCII/);
  });
});

describe('webpush and fcm_options, as Google types them (WebpushConfig, WebpushFcmOptions, AndroidFcmOptions)', () => {
  it('refuses a wrongly typed webpush field, naming its path', () => {
    expect(fcmMessageProblem(message({ webpush: { data: { n: 1 } } }))).toBe('webpush.data.n must be a string (FCM: map<string, string>)');
    expect(fcmMessageProblem(message({ webpush: { headers: { TTL: 60 } } }))).toMatch(/^webpush.headers.TTL must be a string/);
    expect(fcmMessageProblem(message({ webpush: { notification: ['x'] } }))).toMatch(/^webpush.notification must be an object/);
    expect(fcmMessageProblem(message({ webpush: { fcm_options: { link: 'http://example.com' } } }))).toMatch(/^webpush.fcm_options.link must be an HTTPS URL/);
  });

  it('refuses unknown fields in webpush, its fcm_options and android.fcm_options', () => {
    expect(fcmMessageProblem(message({ webpush: { urgency: 'high' } }))).toMatch(/^webpush.urgency is not a field of WebpushConfig/);
    expect(fcmMessageProblem(message({ webpush: { fcm_options: { url: 'https://x' } } }))).toMatch(/^webpush.fcm_options.url is not a field of WebpushFcmOptions/);
    const android = { ...buildFcmMessage(testPush('fcm')).android, fcm_options: { image: 'x' } };
    expect(fcmMessageProblem(message({ android }))).toMatch(/^android.fcm_options.image is not a field of AndroidFcmOptions/);
  });

  it('takes every documented field, by proto or JSON name', () => {
    const webpush = {
      headers: { Urgency: 'high', TTL: '60' },
      data: { n: '1' },
      notification: { title: 't', requireInteraction: true, actions: [{ action: 'a', title: 'A' }] },
      fcmOptions: { link: 'https://example.com/a', analytics_label: 'l' },
    };
    const android = { ...buildFcmMessage(testPush('fcm')).android, fcm_options: { analyticsLabel: 'l' } };
    expect(fcmMessageProblem(message({ webpush, android }))).toBeUndefined();
    expect(fcmMessageProblem(message({ webpush: {} }))).toBeUndefined();
  });
});
