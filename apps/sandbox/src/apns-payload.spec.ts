import { describe, expect, it } from 'vitest';
import { maxPayloadBytes, parseApnsPayload } from './apns-payload.ts';

describe('parseApnsPayload', () => {
  it('limits VoIP pushes to 5120 bytes and every other type to 4096', () => {
    expect(maxPayloadBytes('voip')).toBe(5120);
    expect(maxPayloadBytes('alert')).toBe(4096);
    expect(maxPayloadBytes(undefined)).toBe(4096);
    const big = Buffer.from(JSON.stringify({ aps: {}, x: 'y'.repeat(4500) }));
    expect(parseApnsPayload(big, 'voip')).toMatchObject({ ok: true });
    expect(parseApnsPayload(big, 'alert')).toEqual({ ok: false, status: 413, reason: 'PayloadTooLarge' });
  });

  it('returns the payload and its aps', () => {
    expect(parseApnsPayload(Buffer.from('{"aps":{"badge":1},"k":"v"}'), 'alert')).toEqual({ ok: true, payload: { aps: { badge: 1 }, k: 'v' }, aps: { badge: 1 } });
    expect(parseApnsPayload(Buffer.from('[1]'), 'alert')).toEqual({ ok: false, status: 400, reason: 'BadPayload' });
    expect(parseApnsPayload(Buffer.from('{"aps":[]}'), 'alert')).toEqual({ ok: false, status: 400, reason: 'PayloadEmpty' });
  });
});
