import { describe, expect, it } from 'vitest';
import { apnsWarnings, checkApns } from './fcm-apns.ts';

const messageOf = (apns: unknown, message: Record<string, unknown> = {}): string | undefined => checkApns(apns, message)?.error.body.error.message;
const background = { headers: { 'apns-priority': '10', 'apns-push-type': 'background' }, payload: { aps: { 'content-available': 1 } } };

describe('checkApns', () => {
  it('refuses a data message to Apple devices at apns-priority 10 (Firebase, "Set message priority")', () => {
    expect(messageOf(background)).toMatch(/data messages to Apple devices must be sent with apns-priority 5/);
    expect(messageOf({ headers: { 'apns-priority': '10' } }, { data: { k: 'v' } })).toMatch(/apns-priority 5/);
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

  it("holds the headers and a background push's aps to Apple's rules, since FCM forwards them to APNs", () => {
    const refused = (apns: unknown) => messageOf(apns, { notification: { title: 't' } });
    expect(refused({ headers: { 'apns-priority': 'high' } })).toMatch(/APNs refuses the request FCM forwards \(400 BadPriority\)/);
    expect(refused({ headers: { 'APNs-Priority': '7' } })).toMatch(/BadPriority/);
    expect(refused({ headers: { 'apns-expiration': 'tomorrow' } })).toMatch(/BadExpirationDate/);
    expect(refused({ headers: { 'apns-collapse-id': 'x'.repeat(65) } })).toMatch(/BadCollapseId/);
    expect(refused({ headers: { 'apns-id': 'not-a-uuid' } })).toMatch(/BadMessageId/);
    expect(refused({ headers: { 'apns-push-type': 'carrier-pigeon' } })).toMatch(/InvalidPushType/);
    expect(refused({ headers: { 'apns-push-type': 'voip' } })).toMatch(/TopicDisallowed/);
    expect(messageOf({ headers: { 'apns-push-type': 'background', 'apns-priority': '5' }, payload: { aps: { 'content-available': 1, alert: 'hi' } } })).toMatch(
      /400 BadPayload: a background push must not contain aps.alert/,
    );
    expect(refused({ headers: { 'apns-priority': '5', 'apns-expiration': '0', 'apns-collapse-id': 'c', 'apns-push-type': 'alert' } })).toBeUndefined();
    expect(messageOf({ headers: { 'apns-push-type': 'background', 'apns-priority': '5' }, payload: { aps: { 'content-available': 1 } } })).toBeUndefined();
    // message.notification reaches iOS as aps.alert
    expect(messageOf({ headers: { 'apns-push-type': 'background', 'apns-priority': '5' }, payload: { aps: { 'content-available': 1 } } }, { notification: { title: 't' } })).toMatch(
      /must not contain aps.alert/,
    );
    expect(refused({ headers: { 'apns-priority': 'high' } })).not.toMatch(/registration token/i);
  });

  it('notes a data message with an apns block but no priority', () => {
    expect(apnsWarnings({ payload: { aps: { 'content-available': 1 } } }, {})).toEqual([expect.stringMatching(/no apns-priority/)]);
    expect(apnsWarnings({ headers: { 'apns-priority': '5' } }, {})).toEqual([]);
    expect(apnsWarnings({}, { notification: { title: 't' } })).toEqual([]);
  });
});
