import { describe, expect, it } from 'vitest';
import { apnsRequestParts, type ApnsRequestParts } from './apns-notification.ts';
import { apnsRequestProblem, apnsTopicFor, suffixedTopicWarning } from './apns-rules.ts';
import { testPush } from './test-pushes.ts';

const parts = (over: Partial<ApnsRequestParts>): ApnsRequestParts => ({ ...apnsRequestParts(testPush('apns'), 'com.example'), ...over });

describe('Apple\'s request rules (PROVIDER-RULES.md, APNs rows)', () => {
  it('apns-topic: <bundle>.voip, <bundle>.push-type.liveactivity, the bundle id for alert/background', () => {
    expect(apnsTopicFor('com.example', 'voip')).toBe('com.example.voip');
    expect(apnsTopicFor('com.example', 'liveactivity')).toBe('com.example.push-type.liveactivity');
    expect(apnsTopicFor('com.example', 'complication')).toBe('com.example.complication');
    expect(apnsTopicFor('com.example', 'alert')).toBe('com.example');
  });

  it('apns-topic: a bundle id that ends like a suffix is a bundle id like any other', () => {
    expect(apnsTopicFor('com.acme.voip', 'voip')).toBe('com.acme.voip.voip');
    expect(apnsTopicFor('com.acme.voip', 'alert')).toBe('com.acme.voip');
    expect(apnsTopicFor('com.acme.complication', 'complication')).toBe('com.acme.complication.complication');
  });

  it("a stored topic ending in one of Apple's suffixes is warned of (it was the VoIP topic itself before 2026-12-04), naming where its pushes go and the fix", () => {
    expect(suffixedTopicWarning('calls', 'com.acme.app.voip')).toBe(
      'app "calls": its APNs topic "com.acme.app.voip" ends in ".voip", and Herald appends Apple\'s suffix per push type itself: its voip pushes go to "com.acme.app.voip.voip". If "com.acme.app.voip" is not the bundle id, set the bundle id: herald apps update calls --apns-topic com.acme.app',
    );
    expect(suffixedTopicWarning('live', 'com.acme.app.push-type.liveactivity')).toMatch(/ends in "\.push-type\.liveactivity".*--apns-topic com\.acme\.app$/);
    expect(suffixedTopicWarning('shop', 'com.acme.shop')).toBeUndefined();
    expect(suffixedTopicWarning('none', null)).toBeUndefined();
  });

  it('payload limit: 4096 bytes, counted in UTF-8 bytes of the JSON', () => {
    const base = JSON.stringify({ aps: { alert: { body: '' } } }).length;
    expect(apnsRequestProblem(parts({ payload: { aps: { alert: { body: 'x'.repeat(4096 - base) } } } }))).toBeUndefined();
    expect(apnsRequestProblem(parts({ payload: { aps: { alert: { body: 'x'.repeat(4097 - base) } } } }))).toBe(
      'payload too large: APNs alert payload is 4097 bytes, the limit is 4096',
    );
    expect(apnsRequestProblem(parts({ payload: { aps: { alert: { body: 'é'.repeat(2040) } } } }))).toMatch(/payload too large/);
  });

  it('payload limit: 5120 bytes for VoIP', () => {
    const payload = { aps: {}, blob: 'x'.repeat(5000) };
    expect(apnsRequestProblem(parts({ pushType: 'voip', payload }))).toBeUndefined();
    expect(apnsRequestProblem(parts({ pushType: 'alert', payload }))).toMatch(/limit is 4096/);
  });

  it('apns-collapse-id: printable ASCII, at most 64 bytes', () => {
    expect(apnsRequestProblem(parts({ collapseId: 'x'.repeat(64) }))).toBeUndefined();
    expect(apnsRequestProblem(parts({ collapseId: 'x'.repeat(65) }))).toMatch(/at most 64 bytes/);
    expect(apnsRequestProblem(parts({ collapseId: 'price-€' }))).toMatch(/printable ASCII/);
    expect(apnsRequestProblem(parts({ collapseId: 'tab\there' }))).toMatch(/printable ASCII .*tab/);
  });


  it('background: priority 5, content-available 1, no alert, badge or sound', () => {
    const aps = { 'content-available': 1 };
    expect(apnsRequestProblem(parts({ pushType: 'background', priority: 5, payload: { aps } }))).toBeUndefined();
    expect(apnsRequestProblem(parts({ pushType: 'background', priority: 10, payload: { aps } }))).toMatch(/priority 5/);
    expect(apnsRequestProblem(parts({ pushType: 'background', priority: 5, payload: { aps: {} } }))).toMatch(/content-available/);
    expect(apnsRequestProblem(parts({ pushType: 'background', priority: 5, payload: { aps: { ...aps, badge: 1 } } }))).toMatch(/aps.badge/);
  });

  it('liveactivity: aps.event, aps.timestamp and aps.content-state', () => {
    const ok = { event: 'update', timestamp: 1, 'content-state': {} };
    expect(apnsRequestProblem(parts({ pushType: 'liveactivity', payload: { aps: ok } }))).toBeUndefined();
    expect(apnsRequestProblem(parts({ pushType: 'liveactivity', payload: { aps: { ...ok, event: 'pause' } } }))).toMatch(/aps.event/);
    expect(apnsRequestProblem(parts({ pushType: 'liveactivity', payload: { aps: { event: 'update', 'content-state': {} } } }))).toMatch(/aps.timestamp/);
    // Milliseconds (Date.now()): iOS would drop every later update as older.
    expect(apnsRequestProblem(parts({ pushType: 'liveactivity', payload: { aps: { ...ok, timestamp: 1_767_225_600_000 } } }))).toMatch(/aps.timestamp must be epoch seconds; this looks like milliseconds/);
    expect(apnsRequestProblem(parts({ pushType: 'liveactivity', payload: { aps: { ...ok, 'stale-date': 1_767_225_600_000 } } }))).toMatch(/aps.stale-date must be epoch seconds/);
    expect(apnsRequestProblem(parts({ pushType: 'liveactivity', payload: { aps: { ...ok, timestamp: 1_767_225_600 } } }))).toBeUndefined();
  });

  it('liveactivity: what APNs answers 200 and the device drops (Apple documents no error for it): content-state a dictionary, a start\'s attributes, dates in epoch seconds', () => {
    const la = (aps: Record<string, unknown>) => apnsRequestProblem(parts({ pushType: 'liveactivity', payload: { aps: { timestamp: 1, ...aps } } }));
    expect(la({ event: 'update', 'content-state': [1] })).toMatch(/content-state must be a dictionary/);
    expect(la({ event: 'update', 'content-state': null })).toMatch(/content-state must be a dictionary/);
    expect(la({ event: 'start', 'content-state': {}, 'attributes-type': 'Score' })).toMatch(/start needs aps.attributes-type and aps.attributes/);
    expect(la({ event: 'start', 'content-state': {}, 'attributes-type': 'Score', attributes: {}, alert: { title: 't' } })).toBeUndefined();
    expect(la({ event: 'end', 'dismissal-date': 'tomorrow' })).toMatch(/aps.dismissal-date must be epoch seconds/);
    expect(la({ event: 'update', 'content-state': {}, 'stale-date': 1_800_000_000 })).toBeUndefined();
  });

  it('apns-expiration: epoch seconds; the payload needs an aps dictionary', () => {
    expect(apnsRequestProblem(parts({ expiration: -1 }))).toMatch(/apns-expiration/);
    expect(apnsRequestProblem(parts({ payload: { aps: 'x' } }))).toMatch(/aps dictionary/);
  });
});
