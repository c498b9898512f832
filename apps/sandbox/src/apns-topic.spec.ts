import { describe, expect, it } from 'vitest';
import { topicFitsPushType } from './apns-topic.ts';

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
