import { checkAndroidNotification } from './fcm-android-notification.ts';
import { checkStringMap } from './fcm-data.ts';
import { checkFields, isBool, isObject, isString, scalar, typeError, type FcmProblem, type FieldCheck, type Json } from './fcm-fields.ts';
import { durationSeconds } from './duration.ts';
import { checkFcmOptions } from './fcm-webpush.ts';
import { FCM_MAX_TTL_SECONDS } from './offline-retention.ts';

const DURATION_TYPE = 'type.googleapis.com/google.protobuf.Duration';
const PRIORITIES = ['NORMAL', 'HIGH'];

/** AndroidMessagePriority by name (firebase-admin sends it lower case, which FCM takes) or number. */
const isAndroidPriority = (v: unknown): boolean =>
  (typeof v === 'string' && PRIORITIES.includes(v.toUpperCase())) || v === 0 || v === 1;

/**
 * AndroidConfig.ttl, a Duration: "The maximum time to live supported is 4 weeks, and the default
 * value is 4 weeks if not set. Set it to 0 if want to send the message immediately."
 */
const checkTtl: FieldCheck = (v, at) => {
  const seconds = durationSeconds(v);
  if (seconds === undefined) return typeError(at, DURATION_TYPE, v);
  if (seconds > FCM_MAX_TTL_SECONDS) return typeError(at, DURATION_TYPE, v, `the maximum time to live is 4 weeks (${FCM_MAX_TTL_SECONDS}s)`);
  return undefined;
};

const text = scalar(isString, 'TYPE_STRING');
const flag = scalar(isBool, 'TYPE_BOOL');

/** The fields of AndroidConfig in the FCM v1 reference, by proto name. */
const FIELDS: Readonly<Record<string, FieldCheck>> = {
  collapse_key: text,
  priority: scalar(isAndroidPriority, 'type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority'),
  ttl: checkTtl,
  restricted_package_name: text,
  data: checkStringMap,
  notification: checkAndroidNotification,
  fcm_options: checkFcmOptions('AndroidFcmOptions'),
  direct_boot_ok: flag,
  bandwidth_constrained_ok: flag,
  restricted_satellite_ok: flag,
};

/** `message.android`. */
export function checkAndroid(value: unknown): FcmProblem | undefined {
  if (!isObject(value)) return typeError('message.android', 'type.googleapis.com/google.firebase.fcm.v1.AndroidConfig', value);
  return checkFields(value, 'message.android', FIELDS);
}

const TEXT_FIELDS = ['title', 'body', 'title_loc_key', 'titleLocKey', 'body_loc_key', 'bodyLocKey'];

/**
 * Accepted by Google, but shows a blank tray entry titled with the app's name (the Firebase Android
 * SDK's observed behaviour): an android.notification with no text and no Message.notification text.
 */
export function androidWarnings(message: Json): string[] {
  const android = isObject(message['android']) ? message['android'] : {};
  const own = android['notification'];
  if (!isObject(own)) return [];
  const shared = isObject(message['notification']) ? message['notification'] : {};
  const texts = [own, shared].flatMap((n) => TEXT_FIELDS.filter((k) => typeof n[k] === 'string'));
  return texts.length > 0 ? [] : ['android.notification without a title or body: an Android device shows a blank notification titled with the app\'s name'];
}
