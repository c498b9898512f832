import { z } from 'zod';
import { ApnsOverride, FcmOverride, JsonObject } from './provider-override.ts';
import { WEB_PUSH_TOPIC, WebPushUrgencies } from './web-push.ts';

/**
 * What the user sees (or, for a background push, what the app receives), in one platform-neutral
 * shape. The providers lib turns it into Apple's and Google's wire formats; the rules each field
 * follows are in libs/providers/PROVIDER-RULES.md.
 */

/** Apple's push types that Herald sends (apns-push-type). FCM devices get `alert`/`background` as notification/data messages. */
export const PushTypes = ['alert', 'background', 'voip', 'liveactivity'] as const;
export const PushType = z.enum(PushTypes);
export type PushType = z.infer<typeof PushType>;

/**
 * Data keys the providers reserve: FCM's Message.data ("The key should not be a reserved word
 * ("from", "message_type", or any word starting with "google" or "gcm")"), case as documented, and
 * APNs' `aps` (custom keys sit beside it in the payload).
 */
export const FCM_RESERVED_DATA_KEY = /^(from|message_type)$|^(google|gcm)/;
const isReservedDataKey = (key: string): boolean => FCM_RESERVED_DATA_KEY.test(key) || key === 'aps';
const Data = z.record(z.string().min(1).max(200), z.string()).superRefine((data, ctx) => {
  for (const key of Object.keys(data).filter(isReservedDataKey)) {
    ctx.addIssue({
      code: 'custom',
      path: [key],
      message: 'is reserved: FCM refuses "from", "message_type" and keys starting with "google" or "gcm"; APNs reserves "aps"',
    });
  }
});

/** One loc-args / title-loc-args entry. */
const LocArgs = z.array(z.string().max(1000)).max(20);
const LocKey = z.string().min(1).max(200);

/**
 * Epoch seconds, as Apple's Live Activity dates are. A number of milliseconds (Date.now()) is
 * refused: sent, iOS read every later update, stamped by Herald in seconds, as older than the one
 * shown and dropped it (APNs answering 200), and a stale date in milliseconds never came.
 */
export const MAX_EPOCH_SECONDS = 99_999_999_999;
const EpochSeconds = z
  .number()
  .int()
  .positive()
  .max(MAX_EPOCH_SECONDS, 'must be epoch seconds (Apple: UNIX time in seconds); this looks like milliseconds (Date.now()): divide by 1000');

export const LiveActivity = z.strictObject({
  /** Apple: aps.event. `start` needs `attributesType` and `attributes`. */
  event: z.enum(['start', 'update', 'end']),
  /** aps.content-state: the ActivityKit ContentState, as JSON (optional for `end`). */
  contentState: JsonObject.optional(),
  /** aps.timestamp (epoch seconds) of this update; default: when Herald accepted the job, so a retried older update never looks newer. */
  timestamp: EpochSeconds.optional(),
  /** aps.dismissal-date (epoch seconds) for `end`. */
  dismissalDate: EpochSeconds.optional(),
  /** aps.stale-date (epoch seconds). */
  staleDate: EpochSeconds.optional(),
  attributesType: z.string().min(1).max(200).optional(),
  attributes: JsonObject.optional(),
});
export type LiveActivity = z.infer<typeof LiveActivity>;

/** Web Push choices (PROVIDER-RULES.md "Web Push"): RFC 8030 Topic and Urgency, and JSON merged into what the service worker receives. */
export const WebOverride = z.strictObject({
  /** RFC 8030 §5.4 Topic; default: derived from the job's collapseKey. Sent as a digest when its length is not a multiple of 4 (Apple's push service refuses 1, 5, 9 …; web-rules.ts webTopic). */
  topic: z.string().regex(WEB_PUSH_TOPIC, 'must be 1–32 characters of the URL-safe base64 alphabet (RFC 8030 §5.4 Topic)').optional(),
  /** RFC 8030 §5.3 Urgency; default: from the job's priority. */
  urgency: z.enum(WebPushUrgencies).optional(),
  /** Merged last into the JSON Herald encrypts for the browser (null removes a key). */
  payload: JsonObject.optional(),
});
export type WebOverride = z.infer<typeof WebOverride>;

const Color = z.string().regex(/^#[0-9a-fA-F]{6}$/, 'must be #rrggbb (FCM AndroidNotification.color)');

export const PushContentShape = {
  title: z.string().max(2000).optional(),
  subtitle: z.string().max(2000).optional(),
  body: z.string().max(4000).optional(),
  /** Localized alert: APNs title-loc-key/loc-key/loc-args, FCM title_loc_key/body_loc_key/body_loc_args. */
  titleLocKey: LocKey.optional(),
  titleLocArgs: LocArgs.optional(),
  locKey: LocKey.optional(),
  locArgs: LocArgs.optional(),
  /** Custom key/value data. FCM requires string values, so Herald does too on every platform. */
  data: Data.optional(),
  badge: z.number().int().min(0).max(99_999).optional(),
  sound: z.string().min(1).max(200).optional(),
  threadId: z.string().min(1).max(200).optional(),
  imageUrl: z.url().optional(),
  /** A silent background push (APNs content-available, FCM data-only). */
  contentAvailable: z.boolean().optional(),
  /** Apple's push type; default: `alert` when there is something to show, else `background`. */
  pushType: PushType.optional(),
  /** aps.mutable-content: a notification service extension may change it (rich media). Implied by imageUrl. */
  mutableContent: z.boolean().optional(),
  /** aps.interruption-level (iOS 15+ focus modes). `critical` needs Apple's entitlement. */
  interruptionLevel: z.enum(['passive', 'active', 'time-sensitive', 'critical']).optional(),
  /** aps.relevance-score, 0–1: which notification of a summary is featured. */
  relevanceScore: z.number().min(0).max(1).optional(),
  /** aps.target-content-id: the window to bring forward. */
  targetContentId: z.string().min(1).max(200).optional(),
  /** The notification's action category (aps.category; not Android's click_action, an intent action: that is clickAction). */
  actionCategory: z.string().min(1).max(200).optional(),
  /** A Live Activity update (push type `liveactivity`). */
  liveActivity: LiveActivity.optional(),
  /** FCM AndroidNotification fields. */
  channelId: z.string().min(1).max(200).optional(),
  clickAction: z.string().min(1).max(500).optional(),
  tag: z.string().min(1).max(200).optional(),
  color: Color.optional(),
  icon: z.string().min(1).max(200).optional(),
  /** Raw APNs fields Herald does not model, merged last: `{ headers, payload }`. */
  apns: ApnsOverride.optional(),
  /** Raw FCM v1 Message fields Herald does not model, merged last: `{ android, apns, webpush }`. */
  fcm: FcmOverride.optional(),
  /** Web Push topic, urgency and extra payload JSON: `{ topic, urgency, payload }`. */
  web: WebOverride.optional(),
};

type Content = z.infer<z.ZodObject<typeof PushContentShape>>;

export const hasAlertText = (c: Content): boolean =>
  c.title !== undefined || c.subtitle !== undefined || c.body !== undefined || c.titleLocKey !== undefined || c.locKey !== undefined;

/** What an alert shows or plays: text, a badge or a sound. */
const showsSomething = (c: Content): boolean => hasAlertText(c) || c.badge !== undefined || c.sound !== undefined;

/**
 * The push type a content resolves to: the one given, else `liveactivity` for a Live Activity
 * update, `alert` when it shows something, else `background` (data-only and content-available
 * pushes wake the app instead of showing nothing).
 */
export function resolvePushType(c: Content): PushType {
  if (c.pushType !== undefined) return c.pushType;
  if (c.liveActivity !== undefined) return 'liveactivity';
  return showsSomething(c) ? 'alert' : 'background';
}

/**
 * The push type a job is sent as: the raw override's `content.apns.headers['apns-push-type']` when
 * it sets one, else the resolved type. Everything the push type decides (the token kind and
 * platforms a job reaches, now-or-never, the size limit, the aps dictionary, the rules at the
 * door) reads this, so a VoIP push chosen through the header is a VoIP push everywhere; except
 * FCM's message, which follows the typed content (resolvePushType): the header is APNs' own.
 */
export function effectivePushType(c: Content): PushType {
  return c.apns?.headers?.['apns-push-type'] ?? resolvePushType(c);
}

/** The field that chose the push type, as an issue path. */
const pushTypeField = (c: Content): string[] => (c.apns?.headers?.['apns-push-type'] !== undefined ? ['apns', 'headers', 'apns-push-type'] : ['pushType']);

/** The raw APNs payload (`content.apns.payload`) gives its own alert, badge or sound (or, with `keys`, one of those). */
function rawApsShows(c: Content, keys: readonly string[] = ['alert', 'badge', 'sound']): boolean {
  const aps = c.apns?.payload?.['aps'];
  if (typeof aps !== 'object' || aps === null || Array.isArray(aps)) return false;
  return keys.some((k) => (aps as Record<string, unknown>)[k] !== undefined);
}

/** Cross-field rules; each issue names its field. */
function checkContent(c: Content, ctx: z.RefinementCtx): void {
  const issue = (path: string | string[], message: string): void => void ctx.addIssue({ code: 'custom', path: typeof path === 'string' ? [path] : path, message });
  const type = effectivePushType(c);
  const typeField = pushTypeField(c);
  if (!showsSomething(c) && c.data === undefined && c.contentAvailable !== true && c.liveActivity === undefined) {
    issue('title', 'content needs a title, a body, a loc key, a badge, a sound, data, contentAvailable: true or a liveActivity');
  }
  if (c.titleLocArgs !== undefined && c.titleLocKey === undefined) issue('titleLocArgs', 'needs titleLocKey');
  if (c.locArgs !== undefined && c.locKey === undefined) issue('locArgs', 'needs locKey');
  if (type === 'background') {
    for (const f of ['title', 'subtitle', 'body', 'titleLocKey', 'locKey', 'badge', 'sound'] as const) {
      if (c[f] !== undefined) issue(f, 'a background push carries no alert, badge or sound (Apple: background notifications); use pushType "alert"');
    }
  }
  // The raw payload's own alert counts: a job giving its alert there was taken before the header
  // override chose the push type everywhere, and pushes of it may be stored or queued.
  if (type === 'alert' && !showsSomething(c) && !rawApsShows(c)) {
    issue(typeField, 'an alert push needs a title, a body, a loc key, a badge or a sound: with nothing to show, send data as a background push');
  }
  if (type === 'liveactivity' && c.liveActivity === undefined) issue('liveActivity', 'pushType "liveactivity" needs liveActivity { event, contentState }');
  if (c.liveActivity !== undefined && c.liveActivity.event !== 'end' && c.liveActivity.contentState === undefined) {
    issue('liveActivity', `event "${c.liveActivity.event}" needs contentState`);
  }
  if (type !== 'liveactivity' && c.liveActivity !== undefined) issue(typeField, 'liveActivity needs pushType "liveactivity"');
  const la = c.liveActivity;
  if (la?.event === 'start' && (la.attributesType === undefined || la.attributes === undefined)) {
    issue('liveActivity', 'event "start" needs attributesType and attributes (Apple: starting a Live Activity with a push)');
  }
  // APNs answers 200 to a start without an alert, and the device starts nothing: the push would read delivered.
  if (la?.event === 'start' && !hasAlertText(c) && !rawApsShows(c, ['alert'])) {
    issue('title', 'a Live Activity "start" needs an alert (a title, body or loc key): the device starts no activity from a push without aps.alert, though APNs answers 200 (Apple\'s and Firebase\'s start payloads carry one)');
  }
}

/** The JSON key a direct APNs payload carries `imageUrl` under, for the app's notification service extension (apnsPayloadOf). */
export const APNS_IMAGE_URL_KEY = 'image-url';

/**
 * Rules a job's content meets where it enters Herald (the HTTP API, the client library and so the
 * CLI), beyond what PushContent holds every job and push to: kept out of the contracts the services
 * decode with, so jobs and pushes accepted before a rule (queued, parked, stored for later, a
 * fan-out under way) are still sent, and a repost of one is still its duplicate. Each issue's path
 * is within the content.
 * - A data key `collapse_key`: the Firebase Android SDK's RemoteMessage.getData() leaves it out,
 *   with "from", "message_type" and the "google." keys (Google's reserved words; firebase-android-sdk
 *   Constants.MessagePayloadKeys), so the app never sees it; an iPhone would.
 * - A data key `image-url` beside `imageUrl`: the APNs payload carries the image there, replacing it.
 * - An `imageUrl` that is not http(s): the devices and browsers download the image by its URL (an
 *   http one is said in the job's notices: jobNotices).
 */
export function newContentIssues(c: PushContent): { path: string; message: string }[] {
  const issues: { path: string; message: string }[] = [];
  if (c.data !== undefined && Object.hasOwn(c.data, 'collapse_key')) {
    issues.push({ path: 'data.collapse_key', message: 'is reserved: the Firebase Android SDK leaves it out of the data the app receives (as "from", "message_type" and keys starting with "google"); name it otherwise' });
  }
  if (c.imageUrl !== undefined && c.data !== undefined && Object.hasOwn(c.data, APNS_IMAGE_URL_KEY)) {
    issues.push({ path: `data.${APNS_IMAGE_URL_KEY}`, message: `clashes with imageUrl, which an iPhone's payload carries as "${APNS_IMAGE_URL_KEY}" for its notification service extension; name it otherwise` });
  }
  if (c.imageUrl !== undefined && !/^https?:\/\//i.test(c.imageUrl)) {
    issues.push({ path: 'imageUrl', message: 'must be an https (or http) URL: phones and browsers download the image from it' });
  }
  return issues;
}

export const PushContent = z.strictObject(PushContentShape).superRefine(checkContent);
export type PushContent = z.infer<typeof PushContent>;
