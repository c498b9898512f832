import { checkAps } from './apns-aps-rules.ts';
import { checkApnsHeaders } from './apns-headers.ts';
import { checkStringMap } from './fcm-data.ts';
import { checkApnsFcmOptions } from './fcm-webpush.ts';
import { checkFields, invalid, isObject, isString, scalar, typeError, type FcmProblem, type FieldCheck, type Json } from './fcm-fields.ts';

/** The fields of ApnsConfig in the FCM v1 reference, by proto name. */
const FIELDS: Readonly<Record<string, FieldCheck>> = {
  headers: checkStringMap,
  payload: scalar(isObject, 'type.googleapis.com/google.protobuf.Struct'),
  fcm_options: checkApnsFcmOptions,
  live_activity_token: scalar(isString, 'TYPE_STRING'),
};

/** No `message.notification` and nothing in `aps` that shows: a data message, as far as iOS goes. */
function isAppleDataMessage(message: Json, apns: Json): boolean {
  if (message['notification'] !== undefined) return false;
  const aps = isObject(apns['payload']) ? apns['payload']['aps'] : undefined;
  return !isObject(aps) || (aps['alert'] === undefined && aps['badge'] === undefined && aps['sound'] === undefined);
}

/**
 * Firebase, "Set message priority": "When sending data messages to Apple devices, the priority
 * must be set to 5, or normal priority. Messages sent with high priority are rejected by the FCM
 * backend with the error INVALID_ARGUMENT."
 */
function checkApplePriority(message: Json, apns: Json, headers: Record<string, string>): FcmProblem | undefined {
  if (headers['apns-priority'] !== '10' || !isAppleDataMessage(message, apns)) return undefined;
  return invalid(
    `Invalid value at 'message.apns.headers' ("apns-priority"), "10": data messages to Apple devices must be sent with apns-priority 5 (normal priority)`,
    'message.apns.headers',
  );
}


/**
 * The headers FCM forwards to APNs for `message.apns`, names in lower case (FCM names the topic
 * unless they do). Each value as the APNs server decodes it, one Latin-1 character a byte, taking
 * the bytes to be the JSON string's UTF-8 (Google does not say how FCM encodes them), so Apple's
 * byte rule for the collapse id counts bytes, not characters.
 */
function forwardedHeaders(apns: Json): Record<string, string> {
  const given = isObject(apns['headers']) ? (apns['headers'] as Record<string, string>) : {};
  const headers: Record<string, string> = { 'apns-topic': 'com.example.firebase-app' };
  for (const [name, value] of Object.entries(given)) {
    const text = String(value);
    headers[name.toLowerCase()] = Buffer.byteLength(text, 'utf8') === text.length ? text : Buffer.from(text, 'utf8').toString('latin1');
  }
  return headers;
}

/** The aps FCM forwards: message.notification shows on iOS as aps.alert. */
function forwardedAps(apns: Json, message: Json): Json {
  const given = isObject(apns['payload']) && isObject(apns['payload']['aps']) ? apns['payload']['aps'] : {};
  return message['notification'] === undefined ? given : { ...given, alert: message['notification'] };
}

/**
 * Firebase, ApnsConfig.headers: "HTTP request headers defined in Apple Push Notification Service.
 * Refer to APNs request headers for supported headers such as apns-expiration and apns-priority."
 * FCM forwards them to APNs, so Apple's header rules hold (apns-priority 10, 5 or 1, not 10 for
 * background; epoch seconds; a collapse id of at most 64 bytes; a UUID apns-id; a known push type).
 * Refused as INVALID_ARGUMENT naming Apple's reason, never a registration token (the token is not
 * what is wrong). Apple's rule for a background push's aps (content-available, nothing shown) has
 * no documented answer at APNs or FCM: accepted with a warning (`apnsWarnings`).
 */
function checkAppleRules(headers: Record<string, string>): FcmProblem | undefined {
  const byHeaders = checkApnsHeaders(headers);
  if (byHeaders === undefined) return undefined;
  return invalid(`Invalid value at 'message.apns': APNs refuses the request FCM forwards (${byHeaders.status} ${byHeaders.reason})`, 'message.apns.headers');
}

/** `message.apns`: known fields, string headers, a Struct payload, normal priority for data messages, Apple's rules. */
export function checkApns(value: unknown, message: Json): FcmProblem | undefined {
  if (!isObject(value)) return typeError('message.apns', 'type.googleapis.com/google.firebase.fcm.v1.ApnsConfig', value);
  const fields = checkFields(value, 'message.apns', FIELDS);
  if (fields !== undefined) return fields;
  const headers = forwardedHeaders(value);
  return checkApplePriority(message, value, headers) ?? checkAppleRules(headers);
}

/** Accepted, but likely not what was meant: a data message without a priority; a background push that breaks Apple's aps rule. */
export function apnsWarnings(value: unknown, message: Json): string[] {
  if (!isObject(value)) return [];
  const headers = forwardedHeaders(value);
  const pushType = headers['apns-push-type'];
  const warnings = pushType === 'background' ? checkAps(pushType, forwardedAps(value, message)).warnings : [];
  if (headers['apns-priority'] !== undefined || !isAppleDataMessage(message, value)) return warnings;
  return ['data message with an apns block but no apns-priority: FCM then uses 10, and Google says data messages to Apple devices must use 5', ...warnings];
}
