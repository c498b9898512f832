import { isDuration } from './duration.ts';
import { checkFields, enumOf, isBool, isInt32, isObject, isString, repeated, scalar, typeError, type FieldCheck, type FcmProblem } from './fcm-fields.ts';

const T = 'type.googleapis.com/google.firebase.fcm.v1.AndroidNotification';
/** AndroidNotification.color: "The notification's icon color, expressed in #rrggbb format." */
const COLOR = /^#[0-9a-fA-F]{6}$/;
/** google.protobuf.Timestamp in JSON: RFC 3339, e.g. "2014-10-02T15:01:23.045123456Z". */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

const text = scalar(isString, 'TYPE_STRING');
const flag = scalar(isBool, 'TYPE_BOOL');

/** The fields of AndroidNotification in the FCM v1 reference (projects.messages), by proto name. */
const FIELDS: Readonly<Record<string, FieldCheck>> = {
  title: text,
  body: text,
  icon: text,
  color: scalar((v) => isString(v) && COLOR.test(v), 'TYPE_STRING', 'color must be in #rrggbb format'),
  sound: text,
  tag: text,
  click_action: text,
  body_loc_key: text,
  body_loc_args: repeated(text, 'TYPE_STRING'),
  title_loc_key: text,
  title_loc_args: repeated(text, 'TYPE_STRING'),
  channel_id: text,
  ticker: text,
  sticky: flag,
  event_time: scalar((v) => isString(v) && TIMESTAMP.test(v), 'type.googleapis.com/google.protobuf.Timestamp'),
  local_only: flag,
  notification_priority: enumOf(`${T}.NotificationPriority`, [
    'PRIORITY_UNSPECIFIED', 'PRIORITY_MIN', 'PRIORITY_LOW', 'PRIORITY_DEFAULT', 'PRIORITY_HIGH', 'PRIORITY_MAX',
  ]),
  default_sound: flag,
  default_vibrate_timings: flag,
  default_light_settings: flag,
  vibrate_timings: repeated(scalar(isDuration, 'type.googleapis.com/google.protobuf.Duration'), 'type.googleapis.com/google.protobuf.Duration'),
  visibility: enumOf(`${T}.Visibility`, ['VISIBILITY_UNSPECIFIED', 'PRIVATE', 'PUBLIC', 'SECRET']),
  notification_count: scalar(isInt32, 'TYPE_INT32'),
  light_settings: scalar(isObject, 'type.googleapis.com/google.firebase.fcm.v1.LightSettings'),
  image: text,
  bypass_proxy_notification: flag,
  proxy: enumOf(`${T}.Proxy`, ['PROXY_UNSPECIFIED', 'ALLOW', 'DENY', 'IF_PRIORITY_LOWERED']),
};

/** `message.android.notification`: known fields with their documented types. */
export const checkAndroidNotification: FieldCheck = (value: unknown, at: string): FcmProblem | undefined => {
  if (!isObject(value)) return typeError(at, T, value);
  return checkFields(value, at, FIELDS);
};
