import { describe, expect, it } from 'vitest';
import { apnsHeaderWarnings, checkApnsHeaders, isValidCollapseId } from './apns-headers.ts';

const base = { 'apns-topic': 'com.example.app' };

describe('checkApnsHeaders', () => {
  it.each<[Record<string, string>, string | undefined]>([
    [{ 'apns-push-type': 'liveactivity', 'apns-topic': 'com.example.app.push-type.liveactivity', 'apns-priority': '1' }, 'BadPriority'],
    [{ 'apns-push-type': 'liveactivity', 'apns-topic': 'com.example.app.push-type.liveactivity', 'apns-priority': '5' }, undefined],
    [{ 'apns-push-type': 'liveactivity', 'apns-topic': 'com.example.app.push-type.liveactivity', 'apns-priority': '10' }, undefined],
    [{ 'apns-push-type': 'background', 'apns-priority': '1' }, undefined],
    [{ 'apns-push-type': 'alert', 'apns-priority': '1' }, undefined],
    [{ 'apns-priority': '0' }, 'BadPriority'],
    [{ 'apns-expiration': '0' }, undefined],
    [{ 'apns-expiration': '1.5' }, 'BadExpirationDate'],
    [{ 'apns-push-type': 'pushtotalk', 'apns-topic': 'com.example.app.voip-ptt' }, undefined],
    [{ 'apns-push-type': 'location', 'apns-topic': 'com.example.app' }, 'TopicDisallowed'],
  ])('%j → %s', (headers, reason) => {
    expect(checkApnsHeaders({ ...base, ...headers })?.reason).toBe(reason);
  });
});

describe('isValidCollapseId', () => {
  it('counts bytes as they arrived and takes printable ASCII only', () => {
    expect(isValidCollapseId('c'.repeat(64))).toBe(true);
    expect(isValidCollapseId(' chat~42 ')).toBe(true);
    expect(isValidCollapseId('c'.repeat(65))).toBe(false);
    // "€" sent as UTF-8 arrives as three Latin-1 characters; Node's client sends its low byte only.
    expect(isValidCollapseId('\u00e2\u0082\u00ac')).toBe(false);
    expect(isValidCollapseId('\u00ac')).toBe(false);
    expect(isValidCollapseId('tab\there')).toBe(false);
  });
});

describe('apnsHeaderWarnings', () => {
  it('notes a missing push type and a background push without a priority', () => {
    expect(apnsHeaderWarnings({ ...base, 'apns-push-type': 'alert' })).toEqual([]);
    expect(apnsHeaderWarnings(base)).toEqual([expect.stringMatching(/apns-push-type missing/)]);
    expect(apnsHeaderWarnings({ ...base, 'apns-push-type': 'background' })).toEqual([expect.stringMatching(/always use 5/)]);
    expect(apnsHeaderWarnings({ ...base, 'apns-push-type': 'background', 'apns-priority': '5' })).toEqual([]);
  });
});
