import { invalidForFcm, isObject, type FcmProblem, type Json } from './fcm-fields.ts';

/**
 * Google, "About FCM messages" (Message types): "Notification messages contain a predefined set of
 * user-visible keys. Data messages, by contrast, contain only your user-defined custom key-value
 * pairs. … Maximum payload for both message types is 4096 bytes". The Admin SDK reference words it
 * as "up to 4KB of custom key-value pairs" (DataMessagePayload) and "of predefined key-value
 * pairs" (NotificationPayload).
 */
export const FCM_MAX_PAYLOAD_BYTES = 4096;

const bytesOf = (v: unknown): number => Buffer.byteLength(typeof v === 'string' ? v : JSON.stringify(v), 'utf8');

/** UTF-8 bytes of a map's keys and values (a value that is not a string counts as its JSON text; null is unset). */
function pairBytes(map: unknown): number {
  if (!isObject(map)) return 0;
  return Object.entries(map).reduce((sum, [k, v]) => (v === null || v === undefined ? sum : sum + bytesOf(k) + bytesOf(v)), 0);
}

/**
 * The payload an Android device receives, counted as Google words it: the key-value pairs of
 * `notification` and `android.notification` (the predefined keys) and of the data, which is
 * `android.data` when present (AndroidConfig.data: "If present, it will override
 * google.firebase.fcm.v1.Message.data"), else `data`. Google does not document how it counts the
 * bytes; keys plus values is the most its words allow (Google's own count observed slightly stricter).
 */
export function fcmPayloadBytes(message: Json): number {
  const android = isObject(message['android']) ? message['android'] : {};
  const data = android['data'] ?? message['data'];
  return pairBytes(message['notification']) + pairBytes(android['notification']) + pairBytes(data);
}

/**
 * Over 4096 bytes: 400 INVALID_ARGUMENT. The words are what Google answers (observed, not in
 * Google's ErrorCode page: firebase/firebase-admin-go#580, reown-com/push-server#346), with the
 * FcmError detail (no field is named: the size is the message's as a whole).
 */
export function checkPayloadSize(message: Json): FcmProblem | undefined {
  return fcmPayloadBytes(message) > FCM_MAX_PAYLOAD_BYTES ? invalidForFcm('Android message is too big') : undefined;
}
