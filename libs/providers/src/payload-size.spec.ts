import { describe, expect, it } from 'vitest';
import { checkPayloadSize } from './payload-size.ts';

describe('checkPayloadSize', () => {
  it('accepts ordinary content on both platforms', () => {
    expect(checkPayloadSize('apns', { title: 'Hi', body: 'there', data: { a: 'b' } })).toBeUndefined();
    expect(checkPayloadSize('fcm', { title: 'Hi', body: 'there', data: { a: 'b' } })).toBeUndefined();
  });

  it('names the platform, the size and the limit when content is too large', () => {
    const content = { body: 'x'.repeat(3000), data: { blob: 'y'.repeat(1500) } };
    expect(checkPayloadSize('apns', content)).toMatch(/^payload too large: APNs payload is \d+ bytes, the limit is 4096$/);
    expect(checkPayloadSize('fcm', content)).toMatch(/^payload too large: FCM notification \+ data is \d+ bytes, the limit is 4096$/);
  });

  it('counts bytes, not characters', () => {
    const content = { body: 'é'.repeat(2040) }; // 4080 bytes of body alone
    expect(checkPayloadSize('apns', content)).toBeDefined();
    expect(checkPayloadSize('apns', { body: 'e'.repeat(2040) })).toBeUndefined();
  });

  it('draws the APNs line at exactly 4096 bytes of JSON', () => {
    const base = JSON.stringify({ aps: { alert: { body: '' } } }).length;
    expect(checkPayloadSize('apns', { body: 'x'.repeat(4096 - base) })).toBeUndefined();
    expect(checkPayloadSize('apns', { body: 'x'.repeat(4097 - base) })).toBeDefined();
  });
});
