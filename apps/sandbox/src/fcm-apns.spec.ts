import { describe, expect, it } from 'vitest';
import { apnsWarnings, checkApns } from './fcm-apns.ts';

const messageOf = (apns: unknown, message: Record<string, unknown> = {}): string | undefined => checkApns(apns, message)?.error.body.error.message;
const background = { headers: { 'apns-priority': '10', 'apns-push-type': 'background' }, payload: { aps: { 'content-available': 1 } } };

describe('checkApns', () => {
  it('refuses a data message to Apple devices at apns-priority 10 (Firebase, "Set message priority")', () => {
    expect(messageOf(background)).toMatch(/data messages to Apple devices must be sent with apns-priority 5/);
    expect(messageOf({ headers: { 'apns-priority': '10' } }, { data: { k: 'v' } })).toMatch(/apns-priority 5/);
    // Header names in any case: FCM forwards them to APNs, where names are case-insensitive.
    expect(messageOf({ headers: { 'APNs-Priority': '10' } }, { data: { k: 'v' } })).toMatch(/apns-priority 5/);
    expect(messageOf({ ...background, headers: { 'apns-priority': '5' } })).toBeUndefined();
  });

  it('lets a push that shows something use priority 10', () => {
    expect(messageOf({ headers: { 'apns-priority': '10' } }, { notification: { title: 't' } })).toBeUndefined();
    expect(messageOf({ headers: { 'apns-priority': '10' }, payload: { aps: { alert: 'hi' } } })).toBeUndefined();
    expect(messageOf({ headers: { 'apns-priority': '10' }, payload: { aps: { badge: 1 } } })).toBeUndefined();
  });

  it('does not name a registration token in its message, so clients do not read it as a dead token', () => {
    expect(messageOf(background)).not.toMatch(/registration token/i);
  });

  it('checks the known ApnsConfig fields', () => {
    expect(messageOf({ headers: { 'apns-priority': 10 } })).toMatch(/message.apns.headers\[0\].value/);
    expect(messageOf({ payload: 'x' })).toMatch(/'message.apns.payload' \(type.googleapis.com\/google.protobuf.Struct\)/);
    expect(messageOf({ liveActivityToken: 'abc', fcm_options: { image: 'x' } })).toBeUndefined();
    expect(messageOf({ header: {} })).toMatch(/Unknown name "header" at 'message.apns'/);
  });

  it("holds the headers to Apple's header rules, since FCM forwards them to APNs", () => {
    const refused = (apns: unknown) => messageOf(apns, { notification: { title: 't' } });
    expect(refused({ headers: { 'apns-priority': 'high' } })).toMatch(/APNs refuses the request FCM forwards \(400 BadPriority\)/);
    expect(refused({ headers: { 'APNs-Priority': '7' } })).toMatch(/BadPriority/);
    expect(refused({ headers: { 'apns-expiration': 'tomorrow' } })).toMatch(/BadExpirationDate/);
    expect(refused({ headers: { 'apns-collapse-id': 'x'.repeat(65) } })).toMatch(/BadCollapseId/);
    expect(refused({ headers: { 'apns-id': 'not-a-uuid' } })).toMatch(/BadMessageId/);
    expect(refused({ headers: { 'apns-push-type': 'carrier-pigeon' } })).toMatch(/InvalidPushType/);
    expect(refused({ headers: { 'apns-push-type': 'voip' } })).toMatch(/TopicDisallowed/);
    expect(refused({ headers: { 'apns-push-type': 'background', 'apns-priority': '10' } })).toMatch(/400 BadPriority/);
    expect(refused({ headers: { 'apns-priority': '5', 'apns-expiration': '0', 'apns-collapse-id': 'c', 'apns-push-type': 'alert' } })).toBeUndefined();
    expect(refused({ headers: { 'apns-priority': 'high' } })).not.toMatch(/registration token/i);
  });

  it('counts the collapse id in the UTF-8 bytes FCM forwards, not in characters', () => {
    const refused = (collapseId: string) => messageOf({ headers: { 'apns-collapse-id': collapseId } }, { notification: { title: 't' } });
    expect(refused('price-€')).toBeUndefined();
    expect(refused(`${'€'.repeat(21)}x`)).toBeUndefined();
    expect(refused('€'.repeat(22))).toMatch(/400 BadCollapseId/);
  });

  // Neither Apple nor Google documents an answer for breaking the background aps rule: accepted, noted.
  it("accepts a background push that breaks Apple's aps rule, with a warning naming it", () => {
    const background = (aps: unknown) => ({ headers: { 'apns-push-type': 'background', 'apns-priority': '5' }, payload: { aps } });
    expect(messageOf(background({ 'content-available': 1, alert: 'hi' }))).toBeUndefined();
    expect(apnsWarnings(background({ 'content-available': 1, alert: 'hi' }), {})).toEqual(['a background push must not contain aps.alert']);
    expect(apnsWarnings(background({}), {})).toEqual(['a background push needs aps.content-available = 1']);
    expect(apnsWarnings(background({ 'content-available': 1 }), {})).toEqual([]);
    // message.notification reaches iOS as aps.alert
    expect(messageOf(background({ 'content-available': 1 }), { notification: { title: 't' } })).toBeUndefined();
    expect(apnsWarnings(background({ 'content-available': 1 }), { notification: { title: 't' } })).toEqual(['a background push must not contain aps.alert']);
    expect(apnsWarnings({ headers: { 'APNs-Push-Type': 'background', 'apns-priority': '5' }, payload: { aps: { badge: 1, 'content-available': 1 } } }, {})).toEqual([
      'a background push must not contain aps.badge',
    ]);
  });

  it('notes a data message with an apns block but no priority', () => {
    expect(apnsWarnings({ payload: { aps: { 'content-available': 1 } } }, {})).toEqual([expect.stringMatching(/no apns-priority/)]);
    expect(apnsWarnings({ headers: { 'apns-priority': '5' } }, {})).toEqual([]);
    expect(apnsWarnings({}, { notification: { title: 't' } })).toEqual([]);
  });
});
