/**
 * Google's shape of `Message.webpush`, `Message.android` and the types inside them (the v1
 * `projects.messages` reference: WebpushConfig, WebpushFcmOptions, AndroidConfig,
 * AndroidNotification, AndroidFcmOptions). FCM answers 400 INVALID_ARGUMENT
 * for an unknown field ("Invalid JSON payload received. Unknown name …") or a wrongly typed one,
 * and that refuses the whole message, its Android and iOS parts included. Each problem starts with
 * the field's path in the message (`webpush.data.n …`), which the doors turn into `content.fcm.…`.
 */

import { isObject, type Json } from './merge-json.ts';

/**
 * A field's check: its problem, which starts with the field's path, or undefined. The path is
 * given as the parent's path and the field's key, joined (pathOf) only for a problem.
 */
type Check = (value: unknown, parent: string, key: string) => string | undefined;

/** A field's path: `android.ttl` of `android` and `ttl`; a top-level field's parent is ''. */
const pathOf = (parent: string, key: string): string => (parent === '' ? key : `${parent}.${key}`);

/** proto3 JSON takes a field by its proto name or its lowerCamelCase JSON name. */
const protoName = (name: string): string => (/[A-Z]/.test(name) ? name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) : name);

const text: Check = (v, parent, key) => (typeof v === 'string' ? undefined : `${pathOf(parent, key)} must be a string`);

/** A `map<string, string>`. */
const stringMap: Check = (v, parent, key) => {
  if (!isObject(v)) return `${pathOf(parent, key)} must be a map of strings`;
  for (const name of Object.keys(v)) {
    if (typeof v[name] !== 'string') return `${pathOf(parent, key)}.${name} must be a string (FCM: map<string, string>)`;
  }
  return undefined;
};

/** proto3 JSON's lowerCamelCase name of a field's proto name: `collapseKey` of `collapse_key`. */
const jsonNameOf = (protoFieldName: string): string => protoFieldName.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

/** A field's value under its proto name or its lowerCamelCase JSON name (jsonNameOf's; given, it is not worked out again). */
export const fieldOf = (o: Json, protoFieldName: string, jsonFieldName?: string): unknown =>
  o[protoFieldName] ?? (protoFieldName.includes('_') ? o[jsonFieldName ?? jsonNameOf(protoFieldName)] : undefined);

/** A message type: an object of known fields only, each given once and passing its check (null: unset). */
const fieldsOf = (type: string, table: Readonly<Record<string, Check>>): Check => {
  // Looked up in a Map, faster than in the table's object for every field of every message.
  const checks = new Map(Object.entries(table));
  return (v, parent, key) => {
    const at = pathOf(parent, key);
    if (!isObject(v)) return `${at} must be an object (${type})`;
    for (const name of Object.keys(v)) {
      // The table's names are proto names, which have no capital letters for protoName to change.
      const proto = checks.has(name) ? name : protoName(name);
      const check = checks.get(proto);
      if (check === undefined) return `${at}.${name} is not a field of ${type} (FCM refuses the whole message)`;
      if (proto !== name && proto in v) return `${at}.${name} sets ${at}.${proto} a second time (Herald sets some fields itself: use the proto name)`;
      const value = v[name];
      const problem = value === null ? undefined : check(value, at, name);
      if (problem !== undefined) return problem;
    }
    return undefined;
  };
};

/** WebpushFcmOptions.link: "For all URL values, HTTPS is required." */
const httpsLink: Check = (v, parent, key) =>
  text(v, parent, key) ?? (/^https:\/\//i.test(v as string) ? undefined : `${pathOf(parent, key)} must be an HTTPS URL (FCM requires HTTPS)`);

const WEBPUSH: Check = fieldsOf('WebpushConfig', {
  headers: stringMap,
  data: stringMap,
  notification: (v, parent, key) => (isObject(v) ? undefined : `${pathOf(parent, key)} must be an object (a Struct)`),
  fcm_options: fieldsOf('WebpushFcmOptions', { link: httpsLink, analytics_label: text }),
});

const flag: Check = (v, parent, key) => (typeof v === 'boolean' ? undefined : `${pathOf(parent, key)} must be true or false`);
const repeated = (each: Check): Check => (v, parent, key) =>
  Array.isArray(v) ? v.reduce<string | undefined>((found, item, i) => found ?? each(item, parent, `${key}[${i}]`), undefined) : `${pathOf(parent, key)} must be a list`;
/** A proto enum in JSON: one of its names, or its number. */
const enumOf = (names: readonly string[]): Check => (v, parent, key) =>
  (typeof v === 'string' && names.includes(v)) || (Number.isInteger(v) && (v as number) >= 0 && (v as number) < names.length) ? undefined : `${pathOf(parent, key)} must be one of ${names.join(', ')}`;
/** google.protobuf.Duration in JSON: seconds with up to nine decimals and an "s", e.g. "3.5s". */
export const DURATION = /^(\d+)(\.\d{1,9})?s$/;
const duration: Check = (v, parent, key) => (typeof v === 'string' && DURATION.test(v) ? undefined : `${pathOf(parent, key)} must be a Duration such as "3600s"`);
/** google.protobuf.Timestamp in JSON: RFC 3339, e.g. "2014-10-02T15:01:23.045123456Z". */
const timestamp: Check = (v, parent, key) =>
  typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(v) ? undefined : `${pathOf(parent, key)} must be an RFC 3339 timestamp`;
const int32: Check = (v, parent, key) => {
  const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v;
  return Number.isInteger(n) && (n as number) >= -(2 ** 31) && (n as number) < 2 ** 31 ? undefined : `${pathOf(parent, key)} must be a 32-bit integer`;
};
const object = (type: string): Check => (v, parent, key) => (isObject(v) ? undefined : `${pathOf(parent, key)} must be an object (${type})`);

const ANDROID_FCM_OPTIONS: Check = fieldsOf('AndroidFcmOptions', { analytics_label: text });

/** AndroidNotification, its fields by proto name. */
const ANDROID_NOTIFICATION: Check = fieldsOf('AndroidNotification', {
  ...Object.fromEntries(
    ['title', 'body', 'icon', 'color', 'sound', 'tag', 'click_action', 'body_loc_key', 'title_loc_key', 'channel_id', 'ticker', 'image'].map((f) => [f, text]),
  ),
  ...Object.fromEntries(
    ['sticky', 'local_only', 'default_sound', 'default_vibrate_timings', 'default_light_settings', 'bypass_proxy_notification'].map((f) => [f, flag]),
  ),
  body_loc_args: repeated(text),
  title_loc_args: repeated(text),
  event_time: timestamp,
  notification_priority: enumOf(['PRIORITY_UNSPECIFIED', 'PRIORITY_MIN', 'PRIORITY_LOW', 'PRIORITY_DEFAULT', 'PRIORITY_HIGH', 'PRIORITY_MAX']),
  vibrate_timings: repeated(duration),
  visibility: enumOf(['VISIBILITY_UNSPECIFIED', 'PRIVATE', 'PUBLIC', 'SECRET']),
  notification_count: int32,
  light_settings: object('LightSettings'),
  proxy: enumOf(['PROXY_UNSPECIFIED', 'ALLOW', 'DENY', 'IF_PRIORITY_LOWERED']),
});

/** AndroidMessagePriority: NORMAL or HIGH (Google takes them in lower case too, as firebase-admin sends them), or 0 / 1. */
const androidPriority: Check = (v, parent, key) =>
  (typeof v === 'string' && ['NORMAL', 'HIGH'].includes(v.toUpperCase())) || v === 0 || v === 1 ? undefined : `${pathOf(parent, key)} must be NORMAL or HIGH`;

/** AndroidConfig, its fields by proto name. */
const ANDROID: Check = fieldsOf('AndroidConfig', {
  collapse_key: text,
  priority: androidPriority,
  ttl: duration,
  restricted_package_name: text,
  data: stringMap,
  notification: ANDROID_NOTIFICATION,
  fcm_options: ANDROID_FCM_OPTIONS,
  direct_boot_ok: flag,
  bandwidth_constrained_ok: flag,
  restricted_satellite_ok: flag,
});

/** `webpush` of the message, as Google types it; undefined when absent or well formed. */
export const webpushProblem = (webpush: unknown): string | undefined => (webpush === undefined ? undefined : WEBPUSH(webpush, '', 'webpush'));

/** `android` of the message (Herald's own, with what content.fcm.android set), as Google types it. */
export const androidShapeProblem = (android: Json): string | undefined => ANDROID(android, '', 'android');
