import { describe, expect, it } from 'vitest';
import { parseWith } from './parse.ts';
import { PushContent, effectivePushType, resolvePushType } from './push-content.ts';
import { PushJob, isNowOrNever, jobExpiry } from './push-job.ts';

const reason = (content: unknown): string | undefined => {
  const r = parseWith(PushContent, content);
  return r.ok ? undefined : r.reason;
};
const job = (over: object) => ({ id: 'j', app: 'demo', userId: 'u', category: 'c', content: { title: 'Hi' }, ...over });

describe('PushContent', () => {
  it('resolves the push type: alert when something shows, background for data-only or content-available, liveactivity for an update', () => {
    expect(resolvePushType({ title: 'a' })).toBe('alert');
    expect(resolvePushType({ badge: 3 })).toBe('alert');
    expect(resolvePushType({ data: { k: 'v' } })).toBe('background');
    expect(resolvePushType({ contentAvailable: true })).toBe('background');
    expect(resolvePushType({ liveActivity: { event: 'end', contentState: {} } })).toBe('liveactivity');
    expect(resolvePushType({ pushType: 'voip', data: { k: 'v' } })).toBe('voip');
  });

  it('the apns-push-type override is the push type a job is sent as; without it, the resolved type', () => {
    const voipByHeader = { data: { call: 'x' }, apns: { headers: { 'apns-push-type': 'voip' as const } } };
    expect(effectivePushType(voipByHeader)).toBe('voip');
    expect(effectivePushType({ data: { call: 'x' } })).toBe('background');
    expect(effectivePushType({ title: 't', apns: { headers: { 'apns-priority': '5' } } })).toBe('alert');
  });

  it('a VoIP push chosen through the apns-push-type header is now or never, as with pushType (a call must not ring days later)', () => {
    const accepted = new Date('2026-01-01T00:00:00Z');
    const byHeader = PushJob.parse(job({ content: { data: { call: 'x' }, apns: { headers: { 'apns-push-type': 'voip' } } } }));
    const byField = PushJob.parse(job({ content: { pushType: 'voip', data: { call: 'x' } } }));
    for (const j of [byHeader, byField]) {
      expect(isNowOrNever(j)).toBe(true);
      expect(jobExpiry(j, accepted)).toEqual(new Date('2026-01-01T00:01:00Z'));
    }
    // An expiry of its own still stands.
    expect(isNowOrNever(PushJob.parse(job({ ttl: 30, content: byHeader.content })))).toBe(false);
  });

  it('the header override obeys the push type rules pushType does, naming the header', () => {
    expect(reason({ data: { k: 'v' }, apns: { headers: { 'apns-push-type': 'alert' } } })).toMatch(/apns\.headers\.apns-push-type: an alert push needs a title/);
    expect(reason({ title: 'x', apns: { headers: { 'apns-push-type': 'background' } } })).toMatch(/title: a background push carries no alert/);
    expect(reason({ title: 'x', apns: { headers: { 'apns-push-type': 'liveactivity' } } })).toMatch(/liveActivity: pushType "liveactivity" needs/);
  });

  // Taken before the header chose the push type everywhere: such pushes may be stored or queued, and the pushers decode them with this contract.
  it('an alert given in the raw APNs payload satisfies an alert push type', () => {
    for (const aps of [{ alert: { title: 'Hi' } }, { badge: 2 }, { sound: 'default' }]) {
      expect(reason({ data: { k: 'v' }, apns: { headers: { 'apns-push-type': 'alert' }, payload: { aps } } })).toBeUndefined();
    }
    expect(reason({ data: { k: 'v' }, apns: { headers: { 'apns-push-type': 'alert' }, payload: { aps: { 'thread-id': 't' } } } })).toMatch(/an alert push needs a title/);
  });

  it('a background push carries no alert, badge or sound', () => {
    expect(reason({ pushType: 'background', title: 'x' })).toMatch(/title: a background push carries no alert/);
    expect(reason({ pushType: 'background', data: { k: 'v' } })).toBeUndefined();
  });

  it('data keys FCM or APNs reserve are refused, naming the key', () => {
    for (const key of ['from', 'message_type', 'google.x', 'googleId', 'gcm.y', 'aps']) {
      expect(reason({ title: 't', data: { [key]: 'v' } })).toMatch(new RegExp(`data\\.${key.replace('.', '\\.')}: is reserved`));
    }
    // Only what Google documents, case as documented: FCM accepts these.
    for (const key of ['notification', 'From', 'Google', 'fromage']) expect(reason({ title: 't', data: { [key]: 'v' } })).toBeUndefined();
  });

  it('an explicit alert with nothing to show is refused (it would be an empty alert)', () => {
    expect(reason({ pushType: 'alert', data: { k: 'v' } })).toMatch(/pushType: an alert push needs a title/);
    expect(reason({ pushType: 'alert', badge: 1 })).toBeUndefined();
  });

  it('raw JSON nested deeper than 32 levels is refused, not left to overflow a serializer', () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 40; i++) deep = { d: deep };
    expect(reason({ title: 't', apns: { payload: deep } })).toMatch(/apns.payload: nests deeper than 32 levels/);
    expect(reason({ liveActivity: { event: 'update', contentState: deep } })).toMatch(/nests deeper than 32 levels/);
  });

  it('a Live Activity needs its block, and "start" needs attributes', () => {
    expect(reason({ pushType: 'liveactivity', title: 't' })).toMatch(/liveActivity: pushType "liveactivity" needs/);
    expect(reason({ liveActivity: { event: 'start', contentState: {} } })).toMatch(/attributesType and attributes/);
    expect(reason({ liveActivity: { event: 'update' } })).toMatch(/event "update" needs contentState/);
    expect(reason({ liveActivity: { event: 'end' } })).toBeUndefined();
    // Dates in milliseconds are refused where they are given: iOS would drop every later update as older.
    expect(reason({ liveActivity: { event: 'end', timestamp: 1_767_225_600_000 } })).toMatch(/liveActivity.timestamp: must be epoch seconds .*looks like milliseconds/);
    expect(reason({ liveActivity: { event: 'end', dismissalDate: 1_767_225_600_000 } })).toMatch(/liveActivity.dismissalDate: must be epoch seconds/);
    expect(reason({ liveActivity: { event: 'end', timestamp: 1_767_225_600 } })).toBeUndefined();
    // A start without an alert is answered 200 by APNs, and the device starts nothing.
    const start = { event: 'start', contentState: { eta: 5 }, attributesType: 'Ride', attributes: { rider: 'a' } } as const;
    expect(reason({ liveActivity: start })).toMatch(/^schema violation: title: a Live Activity "start" needs an alert/);
    expect(reason({ title: 'Ride booked', liveActivity: start })).toBeUndefined();
    expect(reason({ locKey: 'RIDE_BOOKED', liveActivity: start })).toBeUndefined();
    expect(reason({ liveActivity: start, apns: { payload: { aps: { alert: { title: 'Ride booked' } } } } })).toBeUndefined();
    expect(reason({ badge: 1, liveActivity: start })).toMatch(/needs an alert/);
    expect(reason({ title: 't', pushType: 'alert', liveActivity: { event: 'end', contentState: {} } })).toMatch(/pushType: liveActivity needs/);
  });

  it('loc args need their loc key; color is #rrggbb; the override allows only documented APNs headers', () => {
    expect(reason({ locArgs: ['a'], title: 't' })).toMatch(/locArgs: needs locKey/);
    expect(reason({ title: 't', color: 'red' })).toMatch(/color: must be #rrggbb/);
    expect(reason({ title: 't', apns: { headers: { 'apns-topic': 'x' } } })).toMatch(/apns.headers/);
    expect(reason({ title: 't', apns: { headers: { 'apns-priority': '7' } } })).toMatch(/apns-priority/);
    // Push types whose tokens Herald does not model would reach device tokens and invalidate them.
    expect(reason({ title: 't', apns: { headers: { 'apns-push-type': 'location' } } })).toMatch(/apns-push-type/);
  });

  it("content.fcm's apns headers follow Apple's rules too (FCM forwards them to APNs); FCM's own are refused; others pass", () => {
    const fcmApns = (headers: Record<string, string>) => reason({ title: 't', fcm: { apns: { headers } } });
    expect(fcmApns({ 'apns-priority': 'high' })).toMatch(/^schema violation: fcm.apns.headers.apns-priority: /);
    expect(fcmApns({ 'apns-expiration': 'tomorrow' })).toMatch(/^schema violation: fcm.apns.headers.apns-expiration: must be epoch seconds/);
    expect(fcmApns({ 'apns-collapse-id': 'x'.repeat(65) })).toMatch(/^schema violation: fcm.apns.headers.apns-collapse-id: .*64 bytes/);
    expect(fcmApns({ 'apns-id': 'call-42' })).toMatch(/^schema violation: fcm.apns.headers.apns-id: must be a UUID/);
    // Through FCM a push reaches the app's own token under the Firebase app's topic: another type or topic would be DeviceTokenNotForTopic.
    expect(fcmApns({ 'apns-push-type': 'voip' })).toMatch(/^schema violation: fcm.apns.headers.apns-push-type: /);
    expect(fcmApns({ 'apns-topic': 'com.example.other' })).toMatch(/^schema violation: fcm.apns.headers.apns-topic: FCM sets apns-topic itself/);
    // Header names are case-insensitive: the rules hold in any case, and one header given twice is refused.
    expect(fcmApns({ 'APNs-Priority': 'high' })).toMatch(/^schema violation: fcm.apns.headers.APNs-Priority: /);
    expect(fcmApns({ 'Apns-Topic': 'com.example.other' })).toMatch(/FCM sets apns-topic itself/);
    expect(fcmApns({ 'apns-priority': '5', 'APNS-PRIORITY': '10' })).toMatch(/APNS-PRIORITY: the same header as "apns-priority"/);
    expect(fcmApns({ 'Apns-Priority': '5', 'apns-expiration': '0', 'apns-push-type': 'alert', 'apns-id': '12345678-1234-1234-1234-123456789012', 'x-trace': 'y' })).toBeUndefined();
    // Named like an Object property: another header, not a crash (the API answered 500).
    expect(fcmApns({ Constructor: 'x', toString: 'y', __proto__x: 'z' })).toBeUndefined();
  });
});

describe('PushJob.collapseKey', () => {
  it.each(['price-€', 'fire-🔥', 'tab\tkey', 'x'.repeat(65)])('refuses %j, naming the 64-byte printable-ASCII rule', (collapseKey) => {
    const r = parseWith(PushJob, job({ collapseKey }));
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.reason).toMatch(/collapseKey: must be printable ASCII .*at most 64 bytes/);
  });

  it('accepts 64 bytes of printable ASCII', () => {
    expect(parseWith(PushJob, job({ collapseKey: 'k'.repeat(64) })).ok).toBe(true);
  });
});
