import { describe, expect, it } from 'vitest';
import { certificateTopic, topicFitsPushType } from './apns-topic.ts';

describe('topicFitsPushType', () => {
  it.each<[string, string]>([
    ['voip', 'com.example.app.voip'],
    ['liveactivity', 'com.example.app.push-type.liveactivity'],
    ['complication', 'com.example.app.complication'],
    ['fileprovider', 'com.example.app.pushkit.fileprovider'],
    ['location', 'com.example.app.location-query'],
    ['pushtotalk', 'com.example.app.voip-ptt'],
    ['alert', 'com.example.app'],
    ['background', 'com.example.app'],
    // a bundle id may end like a suffix: its alerts go to it, its VoIP pushes to <it>.voip
    ['alert', 'com.acme.voip'],
    ['background', 'com.acme.push-type.liveactivity'],
    ['voip', 'com.acme.voip.voip'],
  ])('accepts %s to %s', (pushType, topic) => {
    expect(topicFitsPushType(topic, pushType)).toBe(true);
  });

  it.each<[string, string]>([
    ['voip', 'com.example.app'],
    ['voip', 'com.example.app.voip-ptt'],
    ['liveactivity', 'com.example.app'],
    ['complication', 'com.example.app.voip'],
    ['fileprovider', 'com.example.app.fileprovider'],
    ['location', 'com.example.app.location'],
    ['pushtotalk', 'com.example.app.voip'],
    ['voip', '.voip'],
  ])('refuses %s to %s', (pushType, topic) => {
    expect(topicFitsPushType(topic, pushType)).toBe(false);
  });

  it('checks nothing without a push type', () => {
    expect(topicFitsPushType('com.example.app.voip', undefined)).toBe(true);
  });
});

describe('certificateTopic', () => {
  it("is the Subject's UID, else the CN's bundle id, for Apple's single-topic certificates (one environment, one app; VoIP; Wallet passes)", () => {
    expect(certificateTopic({ UID: 'com.example.app', CN: 'Apple Development IOS Push Services: com.example.app', OU: 'ABCDE12345', C: 'US' })).toBe('com.example.app');
    expect(certificateTopic({ UID: ['com.example.app', 'com.example.other'], CN: 'Apple Production IOS Push Services: com.example.app' })).toBe('com.example.app');
    expect(certificateTopic({ CN: 'Apple Production Mac Push Services: com.example.mac' })).toBe('com.example.mac');
    expect(certificateTopic({ UID: 'com.example.app.voip', CN: 'VoIP Services: com.example.app' })).toBe('com.example.app.voip');
    expect(certificateTopic({ UID: 'pass.com.example.card', CN: 'Pass Type ID: pass.com.example.card' })).toBe('pass.com.example.card');
  });

  it('names none for the current certificate, which covers the app, its VoIP and its complication pushes (the sandbox\'s own), nor for other Subjects', () => {
    expect(certificateTopic({ UID: 'com.example.app', CN: 'Apple Push Services: com.example.app' })).toBeUndefined();
    expect(certificateTopic({ CN: 'Apple Push Services: com.herald.sandbox' })).toBeUndefined();
    expect(certificateTopic({ CN: 'localhost' })).toBeUndefined();
    expect(certificateTopic(undefined)).toBeUndefined();
  });
});
