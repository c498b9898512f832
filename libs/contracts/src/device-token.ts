import type { Platform } from './names.ts';
import { webEndpointProblem } from './web-push.ts';

/**
 * Device token formats (libs/providers/PROVIDER-RULES.md).
 * APNs: the device token is binary data that apps send as hex; Apple's tokens are 32 bytes today
 * and Apple warns they may grow, so Herald accepts even-length hex of 64–200 characters.
 * FCM: registration tokens are URL-safe text (letters, digits, "-", "_" and ":"); Google documents
 * no fixed length, so Herald bounds it to 32–4096 characters (today's tokens are about 150–180).
 * One that is an APNs device token's shape (even-length hex of 64–200) is refused when it is
 * registered (apnsShapedFcmToken).
 * Web Push: the "token" is the subscription's endpoint, an https URL (web-push.ts); which push
 * service hosts an app accepts is checked per app at the doors.
 * A token outside these can never be delivered: it would reset an HTTP/2 stream (a space) or reach
 * another path ("/"), so every door refuses it.
 */
const APNS_TOKEN = /^(?:[0-9a-fA-F]{2}){32,100}$/;
const FCM_TOKEN = /^[A-Za-z0-9_:-]{32,4096}$/;

export function deviceTokenProblem(platform: Platform, token: string): string | undefined {
  if (platform === 'web') return webEndpointProblem(token);
  if (platform === 'apns') {
    return APNS_TOKEN.test(token)
      ? undefined
      : `not an APNs device token: expected even-length hexadecimal of 64–200 characters, got ${describe(token)}`;
  }
  return FCM_TOKEN.test(token)
    ? undefined
    : `not an FCM registration token: expected 32–4096 letters, digits, "-", "_" or ":", got ${describe(token)}`;
}

/**
 * Why an FCM token being registered is refused: it has an APNs device token's shape. An iOS app
 * using Firebase that sends Apple's token instead of Firebase's would have it refused by FCM as
 * invalid at the first push, and the device marked dead without a word to the team that
 * registered it. Asked of a register only: a device registered so before can still be unregistered,
 * and a push to it is still sent (FCM's answer marks it dead).
 */
export function apnsShapedFcmToken(token: string): string | undefined {
  return APNS_TOKEN.test(token)
    ? `not an FCM registration token: ${token.length} hexadecimal characters is an APNs device token (an iOS app using Firebase must send the token Firebase gives it, or register this one with platform "apns")`
    : undefined;
}

function describe(token: string): string {
  const bad = /[^A-Za-z0-9_:-]/.exec(token);
  return bad !== null ? `${token.length} characters including ${JSON.stringify(bad[0])}` : `${token.length} characters`;
}

/**
 * Which kind of APNs token a device row holds: the device token (alert and background pushes),
 * a PushKit VoIP token, or a Live Activity push token. FCM tokens are always `device`.
 */
export const TokenKinds = ['device', 'voip', 'liveactivity'] as const;
export type TokenKind = (typeof TokenKinds)[number];

/** The token kind a push type reaches: VoIP and Live Activity pushes go only to tokens registered for them. */
export const tokenKindFor = (pushType: string): TokenKind => (pushType === 'voip' ? 'voip' : pushType === 'liveactivity' ? 'liveactivity' : 'device');

/** How Herald stores a token: APNs hex in lower case, so "AB…" and "ab…" are one device. */
export const normalizeDeviceToken = (platform: Platform, token: string): string => (platform === 'apns' ? token.toLowerCase() : token);
