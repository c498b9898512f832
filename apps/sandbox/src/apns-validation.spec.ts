import { describe, expect, it } from 'vitest';
import { isApnsDeviceToken, validateApnsRequest, type Headers } from './apns-validation.ts';

const TOKEN = 'a'.repeat(64);
const okHeaders: Headers = { 'apns-topic': 'com.example.app', 'apns-push-type': 'alert', 'apns-priority': '10', 'apns-expiration': '0' };
const body = (o: unknown): Buffer => Buffer.from(JSON.stringify(o));
const validate = (headers: Headers, payload: Buffer = body({ aps: { alert: 'hi' } }), method = 'POST', path = `/3/device/${TOKEN}`) =>
  validateApnsRequest({ method, path, headers, body: payload });
const reasonOf = (headers: Headers, payload?: Buffer): string | undefined => {
  const r = validate(headers, payload);
  return r.ok ? undefined : r.reason;
};

describe('validateApnsRequest', () => {
  it('accepts a well-formed alert', () => {
    expect(validate({ ...okHeaders, 'apns-id': '123e4567-e89b-12d3-a456-426614174000' })).toEqual({
      ok: true,
      token: TOKEN,
      apnsId: '123e4567-e89b-12d3-a456-426614174000',
      warnings: [],
    });
  });

  it.each<[string, Headers, Buffer | undefined, number, string]>([
    ['missing topic', { ...okHeaders, 'apns-topic': undefined }, undefined, 400, 'MissingTopic'],
    ['unknown push type', { ...okHeaders, 'apns-push-type': 'shout' }, undefined, 400, 'InvalidPushType'],
    ['voip to the bundle topic', { ...okHeaders, 'apns-push-type': 'voip' }, undefined, 400, 'TopicDisallowed'],
    ['voip to a topic with another suffix', { ...okHeaders, 'apns-push-type': 'voip', 'apns-topic': 'com.example.app.complication' }, undefined, 400, 'TopicDisallowed'],
    ['priority 7', { ...okHeaders, 'apns-priority': '7' }, undefined, 400, 'BadPriority'],
    ['background at priority 10', { ...okHeaders, 'apns-push-type': 'background' }, undefined, 400, 'BadPriority'],
    ['non-integer expiration', { ...okHeaders, 'apns-expiration': 'soon' }, undefined, 400, 'BadExpirationDate'],
    ['negative expiration', { ...okHeaders, 'apns-expiration': '-1' }, undefined, 400, 'BadExpirationDate'],
    ['long collapse id', { ...okHeaders, 'apns-collapse-id': 'x'.repeat(65) }, undefined, 400, 'BadCollapseId'],
    ['garbled (non-ASCII) collapse id', { ...okHeaders, 'apns-collapse-id': 'price-\u00ac' }, undefined, 400, 'BadCollapseId'],
    ['non-UUID apns-id', { ...okHeaders, 'apns-id': 'nope' }, undefined, 400, 'BadMessageId'],
    ['empty body', okHeaders, Buffer.alloc(0), 400, 'PayloadEmpty'],
    ['no aps', okHeaders, body({ data: 1 }), 400, 'PayloadEmpty'],
    ['malformed JSON', okHeaders, Buffer.from('{"aps":'), 400, 'BadPayload'],
    ['payload over 4096 bytes', okHeaders, body({ aps: { alert: 'x'.repeat(4100) } }), 413, 'PayloadTooLarge'],
  ])('rejects %s', (_name, headers, payload, status, reason) => {
    expect(validate(headers, payload)).toEqual({ ok: false, status, reason });
  });

  it('accepts exactly 4096 bytes and a 64-byte collapse id', () => {
    const base = body({ aps: { alert: '' } }).length;
    const payload = body({ aps: { alert: 'x'.repeat(4096 - base) } });
    expect(payload.length).toBe(4096);
    expect(validate({ ...okHeaders, 'apns-collapse-id': 'c'.repeat(64) }, payload).ok).toBe(true);
  });

  it('allows a VoIP push up to 5120 bytes', () => {
    const voip = { ...okHeaders, 'apns-push-type': 'voip', 'apns-topic': 'com.example.app.voip' };
    const base = body({ aps: {}, call: '' }).length;
    expect(validate(voip, body({ aps: {}, call: 'x'.repeat(5120 - base) })).ok).toBe(true);
    expect(reasonOf(voip, body({ aps: {}, call: 'x'.repeat(5121 - base) }))).toBe('PayloadTooLarge');
  });

  it('answers BadPath, MethodNotAllowed and MissingDeviceToken', () => {
    expect(validate(okHeaders, undefined, 'POST', '/2/device/x')).toEqual({ ok: false, status: 404, reason: 'BadPath' });
    expect(validate(okHeaders, undefined, 'GET')).toEqual({ ok: false, status: 405, reason: 'MethodNotAllowed' });
    expect(validate(okHeaders, undefined, 'POST', '/3/device/')).toEqual({ ok: false, status: 400, reason: 'MissingDeviceToken' });
  });

  it.each(['not-hex', 'my-fcm-token', 'a'.repeat(62), 'a'.repeat(65), 'a'.repeat(202), `${'a'.repeat(63)}g`])('answers BadDeviceToken for %s', (token) => {
    expect(validate(okHeaders, undefined, 'POST', `/3/device/${token}`)).toEqual({ ok: false, status: 400, reason: 'BadDeviceToken' });
  });

  it('takes hex tokens of 64 to 200 digits in either case', () => {
    expect(isApnsDeviceToken('AbCdEf01'.repeat(8))).toBe(true);
    expect(isApnsDeviceToken('ab'.repeat(100))).toBe(true);
    expect(validate(okHeaders, undefined, 'POST', `/3/device/${'F0'.repeat(40)}`).ok).toBe(true);
  });

  it('refuses a background push that shows something, and explains why on the rejection', () => {
    const background = { ...okHeaders, 'apns-push-type': 'background', 'apns-priority': '5' };
    expect(validate(background, body({ aps: { 'content-available': 1, badge: 2 } }))).toEqual({
      ok: false,
      status: 400,
      reason: 'BadPayload',
      warnings: ['a background push must not contain aps.badge'],
    });
    expect(validate(background, body({ aps: { 'content-available': 1 }, sync: '1' }))).toMatchObject({ ok: true, warnings: [] });
  });

  it('refuses a malformed Live Activity update', () => {
    const live = { ...okHeaders, 'apns-push-type': 'liveactivity', 'apns-topic': 'com.example.app.push-type.liveactivity' };
    expect(reasonOf(live, body({ aps: { event: 'update', timestamp: 1700000000 } }))).toBe('BadPayload');
    expect(validate(live, body({ aps: { event: 'update', timestamp: 1700000000, 'content-state': { score: 1 } } })).ok).toBe(true);
  });

  it('warns about an alert push that shows nothing and a missing push type', () => {
    const noType = { ...okHeaders, 'apns-push-type': undefined };
    expect(validate(okHeaders, body({ aps: { 'thread-id': 't' } }))).toMatchObject({
      ok: true,
      warnings: ['alert push with no aps.alert, aps.sound or aps.badge: the phone shows nothing'],
    });
    expect(validate(noType)).toMatchObject({ ok: true, warnings: [expect.stringMatching(/^apns-push-type missing/)] });
  });
});
