import { describe, expect, it } from 'vitest';
import { isApnsDeviceToken, validateApnsRequest, type Headers } from './apns-validation.ts';

const TOKEN = 'a'.repeat(64);
const okHeaders: Headers = { 'apns-topic': 'com.example.app', 'apns-push-type': 'alert', 'apns-priority': '10', 'apns-expiration': '0' };
const body = (o: unknown): Buffer => Buffer.from(JSON.stringify(o));
const validate = (headers: Headers, payload: Buffer = body({ aps: { alert: 'hi' } }), method = 'POST', path = `/3/device/${TOKEN}`, certificateTopic?: string) =>
  validateApnsRequest({ method, path, headers, body: payload }, certificateTopic);
/** A header value as Node's HTTP/2 server hands it over: the UTF-8 bytes on the wire, one Latin-1 character each. */
const onTheWire = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');
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
    ['missing topic (token auth)', { ...okHeaders, 'apns-topic': undefined }, undefined, 400, 'MissingTopic'],
    ['empty topic (token auth)', { ...okHeaders, 'apns-topic': '' }, undefined, 400, 'MissingTopic'],
    ['unknown push type', { ...okHeaders, 'apns-push-type': 'shout' }, undefined, 400, 'InvalidPushType'],
    ['voip to the bundle topic', { ...okHeaders, 'apns-push-type': 'voip' }, undefined, 400, 'TopicDisallowed'],
    ['voip to a topic with another suffix', { ...okHeaders, 'apns-push-type': 'voip', 'apns-topic': 'com.example.app.complication' }, undefined, 400, 'TopicDisallowed'],
    ['priority 7', { ...okHeaders, 'apns-priority': '7' }, undefined, 400, 'BadPriority'],
    ['background at priority 10', { ...okHeaders, 'apns-push-type': 'background' }, undefined, 400, 'BadPriority'],
    ['non-integer expiration', { ...okHeaders, 'apns-expiration': 'soon' }, undefined, 400, 'BadExpirationDate'],
    ['negative expiration', { ...okHeaders, 'apns-expiration': '-1' }, undefined, 400, 'BadExpirationDate'],
    ['long collapse id', { ...okHeaders, 'apns-collapse-id': 'x'.repeat(65) }, undefined, 400, 'BadCollapseId'],
    ['a collapse id of 66 bytes in 22 characters', { ...okHeaders, 'apns-collapse-id': onTheWire('€'.repeat(22)) }, undefined, 400, 'BadCollapseId'],
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

  // Apple's response table lists no reason for breaking the background or Live Activity aps rules:
  // accepted (200), the warning names the rule, so a sender's regression still shows in the record.
  it('accepts a background push that shows something, and explains why on the record', () => {
    const background = { ...okHeaders, 'apns-push-type': 'background', 'apns-priority': '5' };
    expect(validate(background, body({ aps: { 'content-available': 1, badge: 2 } }))).toEqual({
      ok: true,
      token: TOKEN,
      apnsId: undefined,
      warnings: ['a background push must not contain aps.badge'],
    });
    expect(validate(background, body({ aps: {} }))).toMatchObject({ ok: true, warnings: ['a background push needs aps.content-available = 1'] });
    expect(validate(background, body({ aps: { 'content-available': 1 }, sync: '1' }))).toMatchObject({ ok: true, warnings: [] });
  });

  it('accepts a malformed Live Activity update, and explains why on the record', () => {
    const live = { ...okHeaders, 'apns-push-type': 'liveactivity', 'apns-topic': 'com.example.app.push-type.liveactivity' };
    expect(validate(live, body({ aps: { event: 'update', timestamp: 1700000000 } }))).toMatchObject({
      ok: true,
      warnings: ['aps.content-state is required for a Live Activity update'],
    });
    expect(validate(live, body({ aps: { event: 'update', timestamp: 1700000000, 'content-state': { score: 1 } } }))).toMatchObject({ ok: true, warnings: [] });
  });

  it('keeps BadPriority for background at 10 and liveactivity at 1; warns about background at 1', () => {
    const background = { ...okHeaders, 'apns-push-type': 'background' };
    const live = { ...okHeaders, 'apns-push-type': 'liveactivity', 'apns-topic': 'com.example.app.push-type.liveactivity' };
    const content = body({ aps: { 'content-available': 1 } });
    expect(reasonOf({ ...background, 'apns-priority': '10' }, content)).toBe('BadPriority');
    expect(reasonOf({ ...live, 'apns-priority': '1' }, body({ aps: { event: 'end', timestamp: 1700000000 } }))).toBe('BadPriority');
    expect(validate({ ...background, 'apns-priority': '1' }, content)).toMatchObject({
      ok: true,
      warnings: ['background push at apns-priority 1: Apple says to always use priority 5 for background pushes; 1 also keeps the device from waking'],
    });
  });

  it('takes any collapse id of at most 64 bytes, as Apple words its only rule', () => {
    const accepted = (collapseId: string) => validate({ ...okHeaders, 'apns-collapse-id': collapseId }).ok;
    expect(accepted(onTheWire('price-€'))).toBe(true);
    expect(accepted(onTheWire(`${'€'.repeat(21)}x`))).toBe(true);
    expect(accepted(onTheWire('🔥'.repeat(16)))).toBe(true);
    expect(accepted(onTheWire('🔥'.repeat(17)))).toBe(false);
    expect(accepted('price-\u00ac')).toBe(true);
  });

  describe('over certificate-based authentication', () => {
    const noTopic = { ...okHeaders, 'apns-topic': undefined };
    const certificateWarning = "apns-topic missing: APNs uses the client certificate's topic (com.example.app); Apple requires apns-topic with token-based authentication";

    it("takes a push without apns-topic to the certificate's topic, and notes it", () => {
      expect(validate(noTopic, undefined, 'POST', `/3/device/${TOKEN}`, 'com.example.app')).toEqual({ ok: true, token: TOKEN, apnsId: undefined, warnings: [certificateWarning] });
      expect(validate({ ...okHeaders, 'apns-topic': '' }, undefined, 'POST', `/3/device/${TOKEN}`, 'com.example.app')).toMatchObject({ ok: true, warnings: [certificateWarning] });
      expect(validate(okHeaders, undefined, 'POST', `/3/device/${TOKEN}`, 'com.example.app')).toMatchObject({ ok: true, warnings: [] });
    });

    it("holds the certificate's topic to the push type's suffix", () => {
      const voip = { ...noTopic, 'apns-push-type': 'voip' };
      expect(validate(voip, undefined, 'POST', `/3/device/${TOKEN}`, 'com.example.app')).toEqual({ ok: false, status: 400, reason: 'TopicDisallowed' });
      expect(validate(voip, undefined, 'POST', `/3/device/${TOKEN}`, 'com.example.app.voip').ok).toBe(true);
    });

    it('still answers MissingTopic when the certificate names no topic', () => {
      expect(validate(noTopic, undefined, 'POST', `/3/device/${TOKEN}`, undefined)).toEqual({ ok: false, status: 400, reason: 'MissingTopic' });
    });
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
