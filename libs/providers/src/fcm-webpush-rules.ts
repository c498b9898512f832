/**
 * Google's shape of `Message.webpush` and of the `fcm_options` types (the v1 `projects.messages`
 * reference: WebpushConfig, WebpushFcmOptions, AndroidFcmOptions). FCM answers 400 INVALID_ARGUMENT
 * for an unknown field ("Invalid JSON payload received. Unknown name …") or a wrongly typed one,
 * and that refuses the whole message, its Android and iOS parts included. Each problem starts with
 * the field's path in the message (`webpush.data.n …`), which the doors turn into `content.fcm.…`.
 */

type Json = Record<string, unknown>;
type Check = (value: unknown, at: string) => string | undefined;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
/** proto3 JSON takes a field by its proto name or its lowerCamelCase JSON name. */
const protoName = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

const text: Check = (v, at) => (typeof v === 'string' ? undefined : `${at} must be a string`);

/** A `map<string, string>`. */
const stringMap: Check = (v, at) => {
  if (!isObject(v)) return `${at} must be a map of strings`;
  const bad = Object.entries(v).find(([, value]) => typeof value !== 'string');
  return bad === undefined ? undefined : `${at}.${bad[0]} must be a string (FCM: map<string, string>)`;
};

/** A message type: an object of known fields only, each passing its check (null: unset). */
const fieldsOf = (type: string, table: Readonly<Record<string, Check>>): Check => (v, at) => {
  if (!isObject(v)) return `${at} must be an object (${type})`;
  for (const [name, value] of Object.entries(v)) {
    const check = table[protoName(name)];
    if (check === undefined) return `${at}.${name} is not a field of ${type} (FCM refuses the whole message)`;
    const problem = value === null ? undefined : check(value, `${at}.${name}`);
    if (problem !== undefined) return problem;
  }
  return undefined;
};

/** WebpushFcmOptions.link: "For all URL values, HTTPS is required." */
const httpsLink: Check = (v, at) => text(v, at) ?? (/^https:\/\//i.test(v as string) ? undefined : `${at} must be an HTTPS URL (FCM requires HTTPS)`);

const WEBPUSH: Check = fieldsOf('WebpushConfig', {
  headers: stringMap,
  data: stringMap,
  notification: (v, at) => (isObject(v) ? undefined : `${at} must be an object (a Struct)`),
  fcm_options: fieldsOf('WebpushFcmOptions', { link: httpsLink, analytics_label: text }),
});

const ANDROID_FCM_OPTIONS: Check = fieldsOf('AndroidFcmOptions', { analytics_label: text });

/** `webpush` of the message, as Google types it; undefined when absent or well formed. */
export const webpushProblem = (webpush: unknown): string | undefined => (webpush === undefined ? undefined : WEBPUSH(webpush, 'webpush'));

/** `android.fcm_options` (android, as given through content.fcm, is otherwise Herald's own). */
export function androidFcmOptionsProblem(android: Json): string | undefined {
  const options = android['fcm_options'] ?? android['fcmOptions'];
  const name = android['fcm_options'] !== undefined ? 'fcm_options' : 'fcmOptions';
  return options === undefined || options === null ? undefined : ANDROID_FCM_OPTIONS(options, `android.${name}`);
}
