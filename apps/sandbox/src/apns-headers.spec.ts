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

describe('checkApnsHeaders: apns-topic', () => {
  it('is required over token-based authentication (no certificate topic)', () => {
    expect(checkApnsHeaders({ 'apns-push-type': 'alert' })?.reason).toBe('MissingTopic');
    expect(checkApnsHeaders({ 'apns-topic': '', 'apns-push-type': 'alert' })?.reason).toBe('MissingTopic');
  });

  it("defaults to the client certificate's topic over certificate-based authentication", () => {
    expect(checkApnsHeaders({ 'apns-push-type': 'alert' }, 'com.example.app')).toBeUndefined();
    expect(checkApnsHeaders({ 'apns-push-type': 'voip' }, 'com.example.app')?.reason).toBe('TopicDisallowed');
    expect(checkApnsHeaders({ 'apns-push-type': 'voip' }, 'com.example.app.voip')).toBeUndefined();
  });
});

describe('isValidCollapseId', () => {
  it('takes any value of at most 64 bytes as they arrived (one Latin-1 character a byte)', () => {
    expect(isValidCollapseId('c'.repeat(64))).toBe(true);
    expect(isValidCollapseId(' chat~42 ')).toBe(true);
    expect(isValidCollapseId('c'.repeat(65))).toBe(false);
    // "€" sent as UTF-8 arrives as three Latin-1 characters: three bytes.
    expect(isValidCollapseId('\u00e2\u0082\u00ac')).toBe(true);
    expect(isValidCollapseId('\u00ac')).toBe(true);
    expect(isValidCollapseId('tab\there')).toBe(true);
    expect(isValidCollapseId('\u00e2\u0082\u00ac'.repeat(21) + 'x')).toBe(true);
    expect(isValidCollapseId('\u00e2\u0082\u00ac'.repeat(22))).toBe(false);
  });
});

describe('apnsHeaderWarnings', () => {
  it('notes a missing push type and a background push without a priority or at priority 1', () => {
    expect(apnsHeaderWarnings({ ...base, 'apns-push-type': 'alert' })).toEqual([]);
    expect(apnsHeaderWarnings(base)).toEqual([expect.stringMatching(/apns-push-type missing/)]);
    expect(apnsHeaderWarnings({ ...base, 'apns-push-type': 'background' })).toEqual([expect.stringMatching(/always use 5/)]);
    expect(apnsHeaderWarnings({ ...base, 'apns-push-type': 'background', 'apns-priority': '5' })).toEqual([]);
    expect(apnsHeaderWarnings({ ...base, 'apns-push-type': 'background', 'apns-priority': '1' })).toEqual([
      'background push at apns-priority 1: Apple says to always use priority 5 for background pushes; 1 also keeps the device from waking',
    ]);
    expect(apnsHeaderWarnings({ ...base, 'apns-push-type': 'alert', 'apns-priority': '1' })).toEqual([]);
  });

  it("notes a push without apns-topic that went to the client certificate's topic", () => {
    expect(apnsHeaderWarnings({ 'apns-push-type': 'alert' }, 'com.example.app')).toEqual([
      "apns-topic missing: APNs uses the client certificate's topic (com.example.app); Apple requires apns-topic with token-based authentication",
    ]);
    expect(apnsHeaderWarnings({ ...base, 'apns-push-type': 'alert' }, 'com.example.app')).toEqual([]);
  });
});
