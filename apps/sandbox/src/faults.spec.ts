import { describe, expect, it } from 'vitest';
import { FaultTable, parseFaultSpec } from './faults.ts';

describe('FaultTable', () => {
  it('matches by platform and token, first added first', () => {
    const t = new FaultTable();
    t.add({ platform: 'apns', token: 'a', error: 'Unregistered' });
    t.add({ platform: 'apns', error: 'BadDeviceToken' });
    expect(t.take('apns', 'a')?.error).toBe('Unregistered');
    expect(t.take('apns', 'b')?.error).toBe('BadDeviceToken');
    expect(t.take('fcm', 'a')).toBeUndefined();
  });

  it('answers `times` times then stops', () => {
    const t = new FaultTable();
    t.add({ platform: 'fcm', error: 'UNAVAILABLE', times: 2 });
    expect(t.take('fcm', 'x')?.error).toBe('UNAVAILABLE');
    expect(t.take('fcm', 'x')?.error).toBe('UNAVAILABLE');
    expect(t.take('fcm', 'x')).toBeUndefined();
    expect(t.list()).toHaveLength(0);
  });

  it('applies to a fraction of requests', () => {
    const rolls = [0.1, 0.9, 0.29, 0.3];
    const t = new FaultTable(() => rolls.shift() ?? 1);
    t.add({ platform: 'apns', error: 'TooManyRequests', fraction: 0.3 });
    expect([1, 2, 3, 4].map(() => t.take('apns', 'x') !== undefined)).toEqual([true, false, true, false]);
  });

  it('a fraction miss does not consume times', () => {
    const t = new FaultTable(() => 0.99);
    t.add({ platform: 'apns', error: 'TooManyRequests', fraction: 0.5, times: 1 });
    expect(t.take('apns', 'x')).toBeUndefined();
    expect(t.list()).toHaveLength(1);
  });
});

describe('parseFaultSpec', () => {
  it('accepts a valid spec', () => {
    expect(parseFaultSpec({ platform: 'fcm', error: 'QUOTA_EXCEEDED', retryAfterSeconds: 2, times: 1 })).toEqual({
      ok: true,
      spec: { platform: 'fcm', error: 'QUOTA_EXCEEDED', retryAfterSeconds: 2, times: 1 },
    });
    expect(parseFaultSpec({ platform: 'apns', error: 'ServiceUnavailable', goaway: true })).toMatchObject({ ok: true });
  });

  it.each<[unknown, RegExp]>([
    [{ platform: 'wns', error: 'x' }, /platform/],
    [{ platform: 'apns', error: 'UNREGISTERED' }, /error must be one of/],
    [{ platform: 'fcm', error: 'Unregistered' }, /error must be one of/],
    [{ platform: 'apns' }, /give an error, a delayMs/],
    [{ platform: 'apns', error: 'Unregistered', fraction: 2 }, /fraction/],
    [{ platform: 'apns', error: 'Unregistered', times: 0 }, /times/],
    [{ platform: 'apns', error: 'Unregistered', token: '' }, /token/],
    [{ platform: 'apns', error: 'BadDeviceToken', unregisteredAtMs: 1 }, /with an APNs Unregistered \(410\) fault only/],
    [{ platform: 'fcm', error: 'UNREGISTERED', unregisteredAtMs: 1 }, /with an APNs Unregistered \(410\) fault only/],
    [{ platform: 'apns', error: 'Unregistered', unregisteredAtMs: '2025-01-01' }, /unregisteredAtMs must be a non-negative number/],
    [{ platform: 'fcm', error: 'UNAVAILABLE', goaway: true }, /goaway goes with an APNs fault with an error only/],
    [{ platform: 'apns', delayMs: 10, goaway: true }, /goaway goes with an APNs fault with an error only/],
    [{ platform: 'apns', error: 'ServiceUnavailable', goaway: 1 }, /goaway must be true/],
  ])('rejects %j', (body, pattern) => {
    const r = parseFaultSpec(body);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(pattern);
  });
});

describe('Web Push faults', () => {
  it('accept the push service statuses by name and refuse APNs or FCM error names', () => {
    expect(parseFaultSpec({ platform: 'web', error: 'Gone', token: 'https://127.0.0.1:4445/wp/abc' })).toMatchObject({ ok: true });
    expect(parseFaultSpec({ platform: 'web', error: 'TooManyRequests', retryAfterSeconds: 5 })).toMatchObject({ ok: true });
    expect(parseFaultSpec({ platform: 'web', error: 'Unregistered' })).toEqual({ ok: false, reason: expect.stringContaining('NotFound, Gone, NotAcceptable, PayloadTooLarge, TooManyRequests, InternalServerError') });
  });
});
