import { invalid, isObject, typeError, type FcmProblem } from './fcm-fields.ts';

/** A `map<string, string>`: an object whose values are all strings. */
export function checkStringMap(value: unknown, at: string): FcmProblem | undefined {
  if (!isObject(value)) return typeError(at, 'type.googleapis.com/google.protobuf.Map', value);
  const entries = Object.entries(value);
  const index = entries.findIndex(([, v]) => typeof v !== 'string');
  if (index >= 0) return typeError(`${at}[${index}].value`, 'TYPE_STRING', entries[index]?.[1]);
  return undefined;
}

/**
 * FCM v1 reference, Message.data: "Arbitrary key/value payload. The key should not be a reserved
 * word ("from", "message_type", or any word starting with "google" or "gcm")." (The "About FCM
 * messages" page words the prefixes "google." and "gcm."; the API reference is followed here.)
 */
export const isReservedDataKey = (key: string): boolean =>
  key === 'from' || key === 'message_type' || key.startsWith('google') || key.startsWith('gcm');

/** `message.data`: string values and no reserved keys (FCM answers "Invalid data payload key"). */
export function checkData(value: unknown, at = 'message.data'): FcmProblem | undefined {
  const map = checkStringMap(value, at);
  if (map !== undefined) return map;
  const reserved = Object.keys(value as object).find(isReservedDataKey);
  if (reserved === undefined) return undefined;
  return invalid(
    `Invalid data payload key: ${reserved} (at '${at}'). The key should not be a reserved word ("from", "message_type", or any word starting with "google" or "gcm").`,
    at,
  );
}
