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
function checkApplePriority(message: Json, apns: Json): FcmProblem | undefined {
  const headers = isObject(apns['headers']) ? apns['headers'] : {};
  if (headers['apns-priority'] !== '10' || !isAppleDataMessage(message, apns)) return undefined;
  return invalid(
    `Invalid value at 'message.apns.headers' ("apns-priority"), "10": data messages to Apple devices must be sent with apns-priority 5 (normal priority)`,
  );
}

/**
 * Firebase, ApnsConfig.headers: "HTTP request headers defined in Apple Push Notification Service.
 * Refer to APNs request headers for supported headers such as apns-expiration and apns-priority."
 * FCM forwards them to APNs, so Apple's header rules hold (apns-priority 10, 5 or 1; epoch seconds;
 * a collapse id of at most 64 bytes; a UUID apns-id; a known push type), and Apple's rule for a
 * background push's aps (content-available, nothing shown). FCM names the topic (the Firebase app's
 * bundle id) unless the headers do. Refused as INVALID_ARGUMENT naming Apple's reason, never a
 * registration token (the token is not what is wrong).
 */
function checkAppleRules(apns: Json, message: Json): FcmProblem | undefined {
  const given = isObject(apns['headers']) ? (apns['headers'] as Record<string, string>) : {};
  const headers: Record<string, string> = { 'apns-topic': 'com.example.firebase-app' };
  for (const [name, value] of Object.entries(given)) headers[name.toLowerCase()] = value;
  const pushType = headers['apns-push-type'];
  const apsGiven = isObject(apns['payload']) && isObject(apns['payload']['aps']) ? apns['payload']['aps'] : {};
  // FCM shows message.notification on iOS as aps.alert.
  const aps = message['notification'] === undefined ? apsGiven : { ...apsGiven, alert: message['notification'] };
  const refused = (status: number, reason: string, why: readonly string[] = []) =>
    invalid(`Invalid value at 'message.apns': APNs refuses the request FCM forwards (${status} ${reason}${why.length > 0 ? `: ${why.join('; ')}` : ''})`);
  const byHeaders = checkApnsHeaders(headers);
  if (byHeaders !== undefined) return refused(byHeaders.status, byHeaders.reason);
  const byAps = pushType === 'background' ? checkAps(pushType, aps) : undefined;
  return byAps?.rejection === undefined ? undefined : refused(byAps.rejection.status, byAps.rejection.reason, byAps.warnings);
}

/** `message.apns`: known fields, string headers, a Struct payload, normal priority for data messages, Apple's rules. */
export function checkApns(value: unknown, message: Json): FcmProblem | undefined {
  if (!isObject(value)) return typeError('message.apns', 'type.googleapis.com/google.firebase.fcm.v1.ApnsConfig', value);
  return checkFields(value, 'message.apns', FIELDS) ?? checkApplePriority(message, value) ?? checkAppleRules(value, message);
}

/** Accepted, but likely not what was meant. */
export function apnsWarnings(value: unknown, message: Json): string[] {
  if (!isObject(value)) return [];
  const headers = isObject(value['headers']) ? value['headers'] : {};
  if (headers['apns-priority'] !== undefined || !isAppleDataMessage(message, value)) return [];
  return ['data message with an apns block but no apns-priority: FCM then uses 10, and Google says data messages to Apple devices must use 5'];
}
