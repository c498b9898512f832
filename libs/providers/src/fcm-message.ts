import { resolvePushType, type DevicePush, type PushContent, type PushType } from '@herald/contracts';
import { apsOf, collapseIdOf, expirationOf, headerValue } from './apns-notification.ts';
import { FCM_MAX_TTL_S, showsNothingOnIos } from './fcm-rules.ts';
import { copyOf, mergeJson, put, type Json } from './merge-json.ts';


/**
 * An FCM HTTP v1 `Message` exactly as Google documents it (snake_case, `ttl` as a Duration string
 * "Ns", priority HIGH/NORMAL). The provider sends it as the request body, serialised once, through
 * firebase-admin's HTTP client (fcm-request.ts).
 */
export interface FcmMessage {
  token: string;
  notification?: { title?: string; body?: string; image?: string };
  data?: Record<string, string>;
  android: Json & { priority: 'HIGH' | 'NORMAL'; ttl: string; collapse_key?: string; notification?: Json };
  apns: { headers: Record<string, string>; payload: Json & { aps: Json } };
  webpush?: Json;
}


/** Data keys that carry, to an Android app, an alert's badge and sound when it has no text to show. */
export const FCM_BADGE_DATA_KEY = 'herald_badge';
export const FCM_SOUND_DATA_KEY = 'herald_sound';

/**
 * What an alert has for Android to show: text (Notification/AndroidNotification title, body or
 * their loc keys), only a subtitle (Android has none: it is shown as the body), or nothing.
 */
type AndroidText = 'text' | 'subtitle' | 'none';
function androidTextOf(c: PushContent): AndroidText {
  if (c.title !== undefined || c.body !== undefined || c.titleLocKey !== undefined || c.locKey !== undefined) return 'text';
  return c.subtitle !== undefined ? 'subtitle' : 'none';
}

function notificationOf(c: PushContent, text: AndroidText): FcmMessage['notification'] {
  if (text === 'none') return undefined;
  const n: Json = {};
  put(n, 'title', c.title);
  put(n, 'body', c.body);
  put(n, 'image', c.imageUrl);
  return Object.keys(n).length > 0 ? n : undefined;
}

/**
 * A subtitle with no title or body is Android's body, set in android.notification (which overrides
 * Notification.body on Android only): in the shared Notification it would reach iOS too, whose
 * aps.alert has the subtitle already, and show there twice.
 */
function androidNotificationOf(push: DevicePush, text: AndroidText): Json | undefined {
  const c = push.content;
  const n: Json = {};
  if (text === 'subtitle') put(n, 'body', c.subtitle);
  put(n, 'channel_id', c.channelId);
  put(n, 'click_action', c.clickAction);
  // The collapse key's meaning on the screen (Apple's apns-collapse-id: "merge multiple notifications
  // into a single notification"; a browser's tag likewise): android.collapse_key only concerns pushes
  // FCM stores, and without a tag "each request creates a new notification" (Google, AndroidNotification.tag).
  // Not the push's own id, as APNs gets (collapseIdOf): a tag counts in FCM's 4 KB.
  put(n, 'tag', c.tag ?? push.collapseKey);
  put(n, 'color', c.color);
  put(n, 'icon', c.icon);
  put(n, 'sound', c.sound);
  // notification_count: "the number of items this notification represents"; 0 is the launcher's
  // default, not iOS's "clear the badge", so it is not sent.
  if (c.badge !== 0) put(n, 'notification_count', c.badge);
  put(n, 'title_loc_key', c.titleLocKey);
  put(n, 'title_loc_args', c.titleLocArgs);
  put(n, 'body_loc_key', c.locKey);
  put(n, 'body_loc_args', c.locArgs);
  return Object.keys(n).length > 0 ? n : undefined;
}

/** An alert with no text for Android: its badge and sound as data (the push's own data keys win), for the app to use. */
function androidDataOf(c: PushContent): Record<string, string> | undefined {
  const extra: Record<string, string> = {};
  if (c.badge !== undefined) extra[FCM_BADGE_DATA_KEY] = String(c.badge);
  put(extra, FCM_SOUND_DATA_KEY, c.sound);
  return Object.keys(extra).length > 0 ? { ...extra, ...c.data } : undefined;
}

/** Seconds FCM may store the push: 0 for now-or-never, the time left until expiresAt capped at 4 weeks, else 4 weeks. */
export function fcmTtlSeconds(push: DevicePush, now: Date): number {
  if (push.nowOrNever === true) return 0;
  if (push.expiresAt === undefined) return FCM_MAX_TTL_S;
  return Math.min(FCM_MAX_TTL_S, Math.max(0, Math.floor((Date.parse(push.expiresAt) - now.getTime()) / 1000)));
}

/**
 * A message built a while ago (before a wait for budget) with its android.ttl counted from `now`
 * again, in place: nothing else in it counts from now when the push has an expiresAt (its
 * apns-expiration is that date). A ttl content.fcm sets or removes stands, as buildFcmMessage
 * merges content.fcm last.
 */
export function fcmTtlFromNow(message: FcmMessage, push: DevicePush, now: Date): void {
  if (push.content.fcm?.android?.['ttl'] !== undefined) return;
  message.android.ttl = `${fcmTtlSeconds(push, now)}s`;
}

function androidOf(push: DevicePush, now: Date, type: PushType, text: AndroidText): FcmMessage['android'] {
  const android: FcmMessage['android'] = { priority: push.priority === 'high' ? 'HIGH' : 'NORMAL', ttl: `${fcmTtlSeconds(push, now)}s` };
  put(android, 'collapse_key', push.collapseKey);
  // A data-only (background) push gets no android.notification: with one, FCM would show a tray
  // entry and keep the data from the app's onMessageReceived while it is in the background. Nor
  // does an alert with no text for Android (a badge or a sound only): the Firebase SDK would show
  // a blank entry titled with the app's name; it goes as a data message carrying them instead.
  if (type === 'background') return android;
  if (text === 'none') put(android, 'data', androidDataOf(push.content));
  else put(android, 'notification', androidNotificationOf(push, text));
  return android;
}

/**
 * The apns block for an iOS app reached through FCM: Apple's rules apply (background at priority 5).
 * FCM's parts follow the typed content's push type (resolvePushType): content.apns, its
 * apns-push-type header included, is APNs' own raw override, and content.fcm is FCM's.
 */
function apnsOf(push: DevicePush, now: Date, type: PushType): FcmMessage['apns'] {
  const background = type === 'background';
  const pushType = background ? 'background' : 'alert';
  const headers: Record<string, string> = {
    'apns-priority': background || push.priority === 'normal' ? '5' : '10',
    'apns-push-type': pushType,
    'apns-expiration': String(expirationOf(push, now)),
  };
  put(headers, 'apns-collapse-id', collapseIdOf(push, pushType));
  return { headers, payload: { aps: apsOf(push.content, push, type) } };
}

/**
 * Google: "When sending data messages to Apple devices, the priority must be set to 5". A message
 * that shows nothing on iOS once content.fcm is merged (an alert only in content.apns's raw aps,
 * APNs' own, which FCM does not send) goes at 5 unless the override names a priority itself.
 */
function dataMessagePriority(message: FcmMessage, override: Json | undefined): void {
  const own = (override?.['apns'] as { headers?: Json } | undefined)?.headers?.['apns-priority'];
  if (own === undefined && showsNothingOnIos(message)) message.apns.headers['apns-priority'] = '5';
}

/** The v1 Message for one device push, the `content.fcm` override merged last. `now` fixes ttl and expiration. */
export function buildFcmMessage(push: DevicePush, now: Date = new Date()): FcmMessage {
  const type = resolvePushType(push.content);
  const text = androidTextOf(push.content);
  const notification = notificationOf(push.content, text);
  const message: Json = { token: push.token };
  put(message, 'notification', notification);
  put(message, 'data', push.content.data);
  message['android'] = androidOf(push, now, type, text);
  message['apns'] = apnsOf(push, now, type);
  const override = push.content.fcm === undefined ? undefined : withLowerCaseApnsHeaders(push.content.fcm);
  const built = (override === undefined ? message : mergeJson(message, override)) as unknown as FcmMessage;
  dataMessagePriority(built, override);
  return built;
}

/**
 * content.fcm with its apns header names in lower case, so one given as "Apns-Priority" replaces
 * Herald's "apns-priority" (HTTP/2 names are lower case), and values without whitespace first or
 * last (headerValue); one of spaces only is left out.
 */
function withLowerCaseApnsHeaders(override: NonNullable<DevicePush['content']['fcm']>): Json {
  const { apns } = override;
  const headers = apns?.headers;
  if (apns === undefined || headers === undefined) return override;
  const lower: [string, unknown][] = [];
  for (const name of Object.keys(headers)) {
    const value: unknown = headers[name];
    const sent = typeof value === 'string' ? headerValue(value) : value;
    // A value of spaces only is no header: Herald's own (a collapse id of the push's id) stays.
    if (sent !== undefined) lower.push([name.toLowerCase(), sent]);
  }
  const lowerApns = copyOf(apns);
  lowerApns['headers'] = Object.fromEntries(lower);
  const withLower = copyOf(override);
  withLower['apns'] = lowerApns;
  return withLower;
}
