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

/** `message.apns`: known fields, string headers, a Struct payload, normal priority for data messages. */
export function checkApns(value: unknown, message: Json): FcmProblem | undefined {
  if (!isObject(value)) return typeError('message.apns', 'type.googleapis.com/google.firebase.fcm.v1.ApnsConfig', value);
  return checkFields(value, 'message.apns', FIELDS) ?? checkApplePriority(message, value);
}

/** Accepted, but likely not what was meant. */
export function apnsWarnings(value: unknown, message: Json): string[] {
  if (!isObject(value)) return [];
  const headers = isObject(value['headers']) ? value['headers'] : {};
  if (headers['apns-priority'] !== undefined || !isAppleDataMessage(message, value)) return [];
  return ['data message with an apns block but no apns-priority: FCM then uses 10, and Google says data messages to Apple devices must use 5'];
}
