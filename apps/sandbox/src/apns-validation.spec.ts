import { describe, expect, it } from 'vitest';
import { validateApnsRequest, type Headers } from './apns-validation.ts';

const TOKEN = 'a'.repeat(64);
const okHeaders: Headers = { 'apns-topic': 'com.example.app', 'apns-push-type': 'alert', 'apns-priority': '10', 'apns-expiration': '0' };
const body = (o: unknown): Buffer => Buffer.from(JSON.stringify(o));
const validate = (headers: Headers, payload: Buffer = body({ aps: { alert: 'hi' } }), method = 'POST', path = `/3/device/${TOKEN}`) =>
  validateApnsRequest({ method, path, headers, body: payload });

describe('validateApnsRequest', () => {
  it('accepts a well-formed alert', () => {
    expect(validate({ ...okHeaders, 'apns-id': '123e4567-e89b-12d3-a456-426614174000' })).toEqual({
      ok: true,
      token: TOKEN,
      apnsId: '123e4567-e89b-12d3-a456-426614174000',
    });
  });

  it.each<[string, Headers, Buffer | undefined, number, string]>([
    ['missing topic', { ...okHeaders, 'apns-topic': undefined }, undefined, 400, 'MissingTopic'],
    ['unknown push type', { ...okHeaders, 'apns-push-type': 'shout' }, undefined, 400, 'InvalidPushType'],
    ['priority 7', { ...okHeaders, 'apns-priority': '7' }, undefined, 400, 'BadPriority'],
    ['background at priority 10', { ...okHeaders, 'apns-push-type': 'background' }, undefined, 400, 'BadPriority'],
    ['non-integer expiration', { ...okHeaders, 'apns-expiration': 'soon' }, undefined, 400, 'BadExpirationDate'],
    ['long collapse id', { ...okHeaders, 'apns-collapse-id': 'x'.repeat(65) }, undefined, 400, 'BadCollapseId'],
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

  it('answers BadPath, MethodNotAllowed and MissingDeviceToken', () => {
    expect(validate(okHeaders, undefined, 'POST', '/2/device/x')).toEqual({ ok: false, status: 404, reason: 'BadPath' });
    expect(validate(okHeaders, undefined, 'GET')).toEqual({ ok: false, status: 405, reason: 'MethodNotAllowed' });
    expect(validate(okHeaders, undefined, 'POST', '/3/device/')).toEqual({ ok: false, status: 400, reason: 'MissingDeviceToken' });
  });

  it('accepts any non-empty token shape', () => {
    expect(validate(okHeaders, undefined, 'POST', '/3/device/not-hex')).toMatchObject({ ok: true, token: 'not-hex' });
  });
});
