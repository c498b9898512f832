import { collapseKeyProblem, FCM_RESERVED_DATA_KEY } from '@herald/contracts';
import { APNS_MAX_PAYLOAD_BYTES, apnsPayloadBytes, backgroundApsProblem } from './apns-rules.ts';
import type { FcmMessage } from './fcm-message.ts';
import { androidShapeProblem, DURATION, fieldOf, webpushProblem } from './fcm-webpush-rules.ts';
import { isObject, type Json } from './merge-json.ts';

/**
 * Google's rules for an FCM HTTP v1 message (the `projects.messages` reference: Message,
 * AndroidConfig, ApnsConfig), rows in PROVIDER-RULES.md, each pinned by fcm-rules.spec.ts.
 */

/** AndroidConfig.ttl: "The maximum time to live supported is 4 weeks". */
export const FCM_MAX_TTL_S = 28 * 24 * 3600;
/** "The maximum payload for both message types is 4096 bytes." */
export const FCM_MAX_PAYLOAD_BYTES = 4096;


const COLOR = /^#[0-9a-fA-F]{6}$/;

const bytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v), 'utf8');
/** Bytes of `{}`, the JSON text of an object without entries. */
const EMPTY_OBJECT_BYTES = 2;
/** Bytes of a value's JSON text, `{}`'s when it is absent. */
const jsonBytes = (v: unknown): number => (v === undefined || v === null ? EMPTY_OBJECT_BYTES : bytes(v));
/** `{"notification":,"data":,"android":}`: fcmPayloadBytes's JSON text but its three values. */
const FCM_PAYLOAD_FRAME_BYTES = bytes({ notification: 0, data: 0, android: 0 }) - 3;

/**
 * Bytes Herald counts against FCM's 4096: what reaches an Android device (notification, the data
 * and android.notification), the data being android.data when present (AndroidConfig.data: "If
 * present, it will override google.firebase.fcm.v1.Message.data"). Google words the payload as
 * those key-value pairs but does not say how it counts bytes; the JSON text errs on the strict side:
 * that of `{ notification, data, android }`, its values counted one by one. `dataBytes`: the JSON
 * text's bytes of the message's own data, when the caller has them.
 */
export function fcmPayloadBytes(m: FcmMessage, dataBytes?: number): number {
  const android = m.android['data'];
  const data = android === undefined || android === null ? (dataBytes ?? jsonBytes(m.data)) : jsonBytes(android);
  return FCM_PAYLOAD_FRAME_BYTES + jsonBytes(m.notification) + data + jsonBytes(m.android.notification);
}

/**
 * apnsPayloadBytes({ ...data, ...payload }), `dataBytes` being data's. When no key is in both, that
 * JSON text holds the entries of each one's own (in another order, which does not change the
 * count) in one pair of braces, with a comma between: counted without making the merged object.
 */
function mergedPayloadBytes(data: Json, dataBytes: number, payload: Json): number {
  if (!isObject(data) || !isObject(payload) || Object.keys(data).some((key) => Object.hasOwn(payload, key))) return apnsPayloadBytes({ ...data, ...payload });
  const payloadBytes = apnsPayloadBytes(payload);
  if (dataBytes === EMPTY_OBJECT_BYTES) return payloadBytes;
  return payloadBytes === EMPTY_OBJECT_BYTES ? dataBytes : dataBytes + payloadBytes - 1;
}

function dataProblem(data: unknown, at: string): string | undefined {
  if (data === undefined) return undefined;
  if (!isObject(data)) return `${at} must be a map of strings`;
  for (const key of Object.keys(data)) {
    const value = data[key];
    if (FCM_RESERVED_DATA_KEY.test(key)) return `${at}.${key} is a key FCM reserves ("from", "message_type", "google…", "gcm…")`;
    if (typeof value !== 'string') return `${at}.${key} must be a string (FCM data values are strings)`;
  }
  return undefined;
}

function androidProblem(android: Json): string | undefined {
  const shape = androidShapeProblem(android);
  if (shape !== undefined) return shape;
  const ttl = DURATION.exec(String(fieldOf(android, 'ttl') ?? '0s'));
  if (ttl === null) return 'android.ttl must be a Duration such as "3600s"';
  const ttlS = Number(`${ttl[1]}${ttl[2] ?? ''}`);
  if (ttlS > FCM_MAX_TTL_S) return `android.ttl is ${ttlS} s, beyond FCM's 4-week maximum (${FCM_MAX_TTL_S} s)`;
  const collapse = fieldOf(android, 'collapse_key', 'collapseKey');
  if (typeof collapse === 'string' && collapseKeyProblem(collapse) !== undefined) return `android.collapse_key ${collapseKeyProblem(collapse)}`;
  const n = android['notification'];
  if (isObject(n) && n['color'] !== undefined && !COLOR.test(String(n['color']))) return 'android.notification.color must be #rrggbb';
  return dataProblem(android['data'], 'android.data');
}

/** No notification and nothing in aps that shows: a data message, as far as iOS goes. */
export function showsNothingOnIos(m: FcmMessage): boolean {
  if (m.notification !== undefined) return false;
  const aps = m.apns.payload.aps;
  return aps['alert'] === undefined && aps['badge'] === undefined && aps['sound'] === undefined;
}

/**
 * What FCM adds to the APNs payload it forwards to iOS, beside the message's data and apns.payload:
 * the notification's image as `fcm_options.image` (Google, "Send an image in the notification
 * payload": the image an iPhone's notification service extension downloads) and its message id,
 * `gcm.message_id` (the key Firebase's own iOS samples read; 19 digits seen). Both count in
 * Apple's 4 KB: a job that filled it with data and an image was accepted, then refused for iOS.
 */
function fcmOwnApnsKeys(m: FcmMessage): Record<string, unknown> {
  const image = m.notification?.image;
  return { 'gcm.message_id': '0'.repeat(19), ...(image !== undefined && { fcm_options: { image } }) };
}

/**
 * The APNs payload FCM forwards to iOS over Apple's 4 KB once FCM's own keys are in it
 * (fcmOwnApnsKeys): held against a new job where it enters (entryConformanceIssues), not against
 * pushes accepted before this count (fcmMessageProblem leaves them out: such a push goes to
 * Android too, which it reaches whole).
 */
export function fcmForwardedToIosProblem(m: FcmMessage): string | undefined {
  const size = apnsPayloadBytes({ ...(m.data ?? {}), ...m.apns.payload, ...fcmOwnApnsKeys(m) });
  return size > APNS_MAX_PAYLOAD_BYTES ? `payload too large: the APNs payload FCM forwards to iOS, with FCM's own keys, is ${size} bytes, the limit is ${APNS_MAX_PAYLOAD_BYTES}` : undefined;
}

/** The apns block must follow Apple's rules too: FCM forwards it to APNs. `dataBytes`: the JSON text's bytes of m.data. */
function apnsProblem(m: FcmMessage, dataBytes: number): string | undefined {
  const headers = m.apns.headers;
  const aps = m.apns.payload.aps;
  // Google: "When sending data messages to Apple devices, the priority must be set to 5"; Apple, for background pushes: "Always use priority 5".
  const priority = headers['apns-priority'];
  if ((showsNothingOnIos(m) || headers['apns-push-type'] === 'background') && priority !== undefined && priority !== '5') {
    return `apns: a data-only (background) push to iOS must use apns-priority 5, not ${priority}`;
  }
  // FCM shows message.notification on iOS as aps.alert.
  const background = headers['apns-push-type'] === 'background' ? backgroundApsProblem(m.notification === undefined ? aps : { ...aps, alert: m.notification }) : undefined;
  if (background !== undefined) return `apns: ${background}`;
  const size = mergedPayloadBytes(m.data ?? {}, dataBytes, m.apns.payload);
  if (size > APNS_MAX_PAYLOAD_BYTES) return `payload too large: the APNs payload FCM forwards to iOS is ${size} bytes, the limit is ${APNS_MAX_PAYLOAD_BYTES}`;
  const collapse = headers['apns-collapse-id'];
  const collapseProblem = collapse === undefined ? undefined : collapseKeyProblem(collapse);
  if (collapseProblem !== undefined) return `apns.headers.apns-collapse-id ${collapseProblem}`;
  return isObject(aps) ? undefined : 'apns.payload.aps must be a dictionary';
}

/** Google's rules for the message Herald is about to send (after any override); a reason, or undefined. */
export function fcmMessageProblem(m: FcmMessage): string | undefined {
  // The data counts in what reaches Android (unless android.data replaces it) and in what FCM forwards to iOS: serialised once for both.
  const dataBytes = jsonBytes(m.data);
  const size = fcmPayloadBytes(m, dataBytes);
  if (size > FCM_MAX_PAYLOAD_BYTES) return `payload too large: FCM message (notification + data + android.notification) is ${size} bytes, the limit is ${FCM_MAX_PAYLOAD_BYTES}`;
  return dataProblem(m.data, 'data') ?? androidProblem(m.android) ?? apnsProblem(m, dataBytes) ?? webpushProblem(m.webpush);
}
