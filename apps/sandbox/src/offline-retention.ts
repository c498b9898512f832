import { isObject, type Json } from './json.ts';
import { durationSeconds } from './duration.ts';

/** Google's limits on what FCM keeps for an offline Android device ("Non-collapsible and collapsible messages"). */
export interface StoreLimits {
  /** "The FCM server can simultaneously store four different collapsible messages per device, each with a different collapse key." */
  collapseKeys: number;
  /** "A limit of 100 messages that can be stored without collapsing. If the limit is reached, all stored messages are discarded." */
  nonCollapsible: number;
}

export const FCM_ANDROID_LIMITS: StoreLimits = Object.freeze({ collapseKeys: 4, nonCollapsible: 100 });

/** What a provider does with an accepted push while the device is offline; `why` names the rule. */
export type Retention =
  /** Dropped: the push was for now or never. */
  | { stored: false; why: string }
  /** Kept until `untilMs`; a later push with the same `slot` replaces it; `limits` bound the device's store. */
  | { stored: true; untilMs: number; slot: string | undefined; why: string; limits?: StoreLimits };

export type DeviceOs = 'android' | 'ios';

const DAY_MS = 86_400_000;
/**
 * Apple, "Sending notification requests to APNs": "If APNs can't deliver a notification
 * immediately, it may store the notification for 30 days or less, depending on the date you
 * specify in the apns-expiration header" and "APNs stores only one notification per bundle ID ...
 * In most cases, the latest notification is stored." Hence one slot per app (topic).
 */
const APNS_MAX_STORE_MS = 30 * DAY_MS;
/** Google, AndroidConfig.ttl: "The maximum time to live supported is 4 weeks, and the default value is 4 weeks if not set." */
export const FCM_MAX_TTL_SECONDS = 28 * 86_400;

/**
 * Apple's rule for `apns-expiration`: 0 = "attempts to deliver the notification only once and
 * doesn't store it"; a non-zero epoch = store and retry until then (at most 30 days); absent = store
 * (at most 30 days: Apple, and for FCM "The backend sets a default value for apns-expiration of
 * 30 days" — ApnsConfig.headers in the FCM v1 reference).
 */
export function appleRetention(expiration: string | undefined, slot: string, receivedAtMs: number): Retention {
  const capMs = receivedAtMs + APNS_MAX_STORE_MS;
  const why = 'Apple: one notification stored per app, the newest';
  if (expiration === undefined) return { stored: true, untilMs: capMs, slot, why };
  const seconds = Number(expiration);
  if (!Number.isFinite(seconds) || seconds === 0) return { stored: false, why: 'apns-expiration 0: delivered once or not at all' };
  const untilMs = Math.min(seconds * 1000, capMs);
  if (untilMs <= receivedAtMs) return { stored: false, why: 'apns-expiration already passed' };
  return { stored: true, untilMs, slot, why };
}

/** An APNs request: its headers decide. */
export const apnsRetention = (headers: Record<string, string>, receivedAtMs: number): Retention =>
  appleRetention(headers['apns-expiration'], `topic:${headers['apns-topic'] ?? ''}`, receivedAtMs);

/** A notification message: `notification` or `android.notification` set (else a data message). */
const isNotificationMessage = (message: Json, android: Json): boolean => isObject(message['notification']) || isObject(android['notification']);

/**
 * An FCM v1 request body. To an Android device: `android.ttl` "0s" means now or never, otherwise
 * kept for the ttl (4 weeks when absent). Google, "Non-collapsible and collapsible messages":
 * "Notification messages are always collapsible and will ignore the collapse_key parameter" (their
 * key is the default, "the app package name"); a data message with a `collapse_key` replaces the
 * stored one of that key; a data message without one is non-collapsible (kept each, 100 at most:
 * `FCM_ANDROID_LIMITS`, applied by the device store). To an iOS device: Apple's rule on
 * `apns.headers["apns-expiration"]`, one stored push per app.
 */
export function fcmRetention(body: unknown, os: DeviceOs, receivedAtMs: number): Retention {
  const message = isObject(body) && isObject(body['message']) ? body['message'] : {};
  if (os === 'ios') {
    const headers = isObject(message['apns']) && isObject(message['apns']['headers']) ? message['apns']['headers'] : {};
    const expiration = headers['apns-expiration'];
    return appleRetention(typeof expiration === 'string' ? expiration : undefined, 'app', receivedAtMs);
  }
  const android: Json = isObject(message['android']) ? message['android'] : {};
  const ttl = android['ttl'] === undefined ? FCM_MAX_TTL_SECONDS : (durationSeconds(android['ttl']) ?? FCM_MAX_TTL_SECONDS);
  if (ttl === 0) return { stored: false, why: 'android.ttl 0s: delivered now or never' };
  const kept = { stored: true as const, untilMs: receivedAtMs + ttl * 1000, limits: FCM_ANDROID_LIMITS };
  if (isNotificationMessage(message, android)) {
    // A token belongs to one app: one slot, the package name's.
    return { ...kept, slot: 'package', why: "notification message: always collapsible, collapse_key ignored, the newest kept under the app's package name" };
  }
  const collapseKey = android['collapse_key'] ?? android['collapseKey'];
  if (typeof collapseKey === 'string') return { ...kept, slot: `collapse:${collapseKey}`, why: `data message with collapse_key "${collapseKey}": the newest of its key kept` };
  return { ...kept, slot: undefined, why: 'data message without collapse_key: non-collapsible, kept while fewer than 100 are stored' };
}
