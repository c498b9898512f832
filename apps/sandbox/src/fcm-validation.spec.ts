import { describe, expect, it } from 'vitest';
import { validateFcmBody } from './fcm-validation.ts';

const message = (m: object): object => ({ message: { token: 'tok', ...m } });
const reasonOf = (body: unknown): string | undefined => {
  const r = validateFcmBody(body);
  return r.ok ? undefined : r.error.body.error.message;
};

/** Google's 400 INVALID_ARGUMENT with the given detail. */
const invalidArgument = (words: string, detail: object): object => ({
  ok: false,
  error: { status: 400, body: { error: { code: 400, message: words, status: 'INVALID_ARGUMENT', details: [detail] } } },
});
const FCM_ERROR = { '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'INVALID_ARGUMENT' };
const badRequest = (field: string, description: string): object => ({ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field, description }] });
const URGENCY = 'Invalid JSON payload received. Unknown name "urgency" at \'message.webpush\': Cannot find field.';

describe('validateFcmBody', () => {
  it('accepts a full v1 message as firebase-admin serialises it', () => {
    const body = message({
      notification: { title: 't', body: 'b', image: 'https://x/y.png' },
      data: { k: 'v' },
      android: { priority: 'high', ttl: '3600s', collapse_key: 'c', notification: { sound: 'default' } },
      apns: { headers: { 'apns-priority': '10' }, payload: { aps: { badge: 1 } } },
    });
    expect(validateFcmBody(body)).toEqual({ ok: true, token: 'tok', validateOnly: false, warnings: [] });
  });

  it("answers a bad value as Google's ErrorCode page's first example: 400 INVALID_ARGUMENT with a BadRequest naming the field", () => {
    const words = "Invalid value at 'message.data[0].value' (TYPE_STRING), 1";
    expect(validateFcmBody(message({ data: { n: 1 } }))).toEqual(
      invalidArgument(words, badRequest('message.data[0].value', words)),
    );
  });

  it("answers a token that cannot be one as the page's second example: the FcmError detail, no BadRequest", () => {
    expect(validateFcmBody({ message: { token: 'not a token' } })).toEqual(invalidArgument('The registration token is not a valid FCM registration token', FCM_ERROR));
  });

  it.each<[string, unknown, RegExp]>([
    ['no target', { message: { data: {} } }, /Recipient of the message is not set/],
    ['two targets', message({ topic: 'news' }), /oneof field 'target' is already set/],
    ['unknown message field', message({ foo: 1 }), /Unknown name "foo" at 'message'/],
    ['unknown body field', { message: { token: 't' }, extra: true }, /Unknown name "extra"/],
    ['bad ttl', message({ android: { ttl: 3600 } }), /message.android.ttl/],
    ['bad priority', message({ android: { priority: 'urgent' } }), /message.android.priority/],
    ['notification not an object', message({ notification: 'hi' }), /message.notification/],
    ['unknown notification field', message({ notification: { sound: 'x' } }), /Unknown name "sound" at 'message.notification'/],
    ['apns header not a string', message({ apns: { headers: { 'apns-priority': 10 } } }), /message.apns.headers\[0\].value/],
    ['no message', {}, /message is required/],
  ])('rejects %s', (_name, body, pattern) => {
    expect(reasonOf(body)).toMatch(pattern);
  });

  it('answers a message over 4096 bytes as Google does: 400 INVALID_ARGUMENT "Android message is too big"', () => {
    expect(validateFcmBody(message({ notification: { title: 'T' }, data: { blob: 'x'.repeat(4090) } }))).toEqual(invalidArgument('Android message is too big', FCM_ERROR));
    expect(reasonOf(message({ android: { data: { blob: 'x'.repeat(4100) } } }))).toBe('Android message is too big');
    expect(validateFcmBody(message({ data: { blob: 'x'.repeat(4092) } }))).toMatchObject({ ok: true });
  });

  it('reports validate_only', () => {
    expect(validateFcmBody({ ...message({}), validate_only: true })).toEqual({ ok: true, token: 'tok', validateOnly: true, warnings: [] });
  });

  it.each(['my fcm token', 'a/b', 'tok.en', 'ключ'])('answers a token outside FCM\'s alphabet (%s) as Google does', (token) => {
    expect(reasonOf({ message: { token } })).toBe('The registration token is not a valid FCM registration token');
  });

  it('accepts tokens of letters, digits, -, _ and :', () => {
    expect(validateFcmBody({ message: { token: 'fcm-token_1:APA91bXYZ' } })).toMatchObject({ ok: true });
  });

  it.each<[string, unknown, RegExp]>([
    ['a reserved data key', message({ data: { from: 'alice' } }), /Invalid data payload key: from/],
    ['ttl over 4 weeks', message({ android: { ttl: '2419201s' } }), /'message\.android\.ttl'.*4 weeks/],
    ['an unknown android field', message({ android: { time_to_live: 5 } }), /Unknown name "time_to_live" at 'message\.android'/],
    ['a bad notification colour', message({ android: { notification: { color: 'red' } } }), /message\.android\.notification\.color/],
    ['a data message to Apple at priority 10', message({ data: { k: 'v' }, apns: { headers: { 'apns-priority': '10' } } }), /apns-priority 5/],
  ])('rejects %s', (_name, body, pattern) => {
    expect(reasonOf(body)).toMatch(pattern);
  });
});

describe('validateFcmBody: WebpushConfig and the FcmOptions types', () => {
  it('refuses a wrongly typed webpush field with Google\'s 400 naming its path', () => {
    expect(validateFcmBody(message({ webpush: { data: { n: 1 } } }))).toEqual(
      invalidArgument("Invalid value at 'message.webpush.data[0].value' (TYPE_STRING), 1", badRequest('message.webpush.data[0].value', "Invalid value at 'message.webpush.data[0].value' (TYPE_STRING), 1")),
    );
    expect(reasonOf(message({ webpush: { headers: { TTL: 60 } } }))).toMatch(/'message.webpush.headers\[0\].value' \(TYPE_STRING\)/);
    expect(reasonOf(message({ webpush: { notification: 'hi' } }))).toMatch(/'message.webpush.notification' \(type.googleapis.com\/google.protobuf.Struct\)/);
    expect(reasonOf(message({ webpush: { fcm_options: { link: 'http://example.com/a' } } }))).toMatch(
      /'message.webpush.fcm_options.link' \(TYPE_STRING\), "http:\/\/example.com\/a": HTTPS is required/,
    );
    expect(reasonOf(message({ webpush: { fcm_options: { link: 5 } } }))).toMatch(/'message.webpush.fcm_options.link' \(TYPE_STRING\)/);
  });

  it('refuses unknown fields in webpush and in every fcm_options', () => {
    expect(validateFcmBody(message({ webpush: { urgency: 'high' } }))).toEqual(
      invalidArgument(URGENCY, badRequest('message.webpush', URGENCY)),
    );
    expect(reasonOf(message({ webpush: { fcm_options: { url: 'https://x' } } }))).toMatch(/Unknown name "url" at 'message.webpush.fcm_options'/);
    expect(reasonOf(message({ fcm_options: { label: 'x' } }))).toMatch(/Unknown name "label" at 'message.fcm_options'/);
    expect(reasonOf(message({ android: { fcm_options: { image: 'x' } } }))).toMatch(/Unknown name "image" at 'message.android.fcm_options'/);
    expect(reasonOf(message({ apns: { fcm_options: { link: 'x' } } }))).toMatch(/Unknown name "link" at 'message.apns.fcm_options'/);
    expect(reasonOf(message({ apns: { fcm_options: { analytics_label: 7 } } }))).toMatch(/'message.apns.fcm_options.analytics_label' \(TYPE_STRING\)/);
  });

  it('accepts every documented field, by proto or JSON name', () => {
    const webpush = {
      headers: { Urgency: 'high', TTL: '60' },
      data: { n: '1' },
      notification: { title: 't', actions: [{ action: 'a', title: 'A' }], requireInteraction: true },
      fcmOptions: { link: 'https://example.com/a', analyticsLabel: 'l' },
    };
    expect(validateFcmBody(message({ webpush, fcmOptions: { analyticsLabel: 'l' }, android: { fcm_options: { analytics_label: 'l' } }, apns: { fcmOptions: { analyticsLabel: 'l', image: 'https://x/i.png' } } }))).toMatchObject({ ok: true });
    expect(validateFcmBody(message({ webpush: {} }))).toMatchObject({ ok: true });
  });
});
