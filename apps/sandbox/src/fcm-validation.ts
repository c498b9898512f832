import { androidWarnings, checkAndroid } from './fcm-android.ts';
import { apnsWarnings, checkApns } from './fcm-apns.ts';
import { checkData } from './fcm-data.ts';
import { checkPayloadSize } from './fcm-size.ts';
import { checkFcmOptions, checkWebpush } from './fcm-webpush.ts';
import { invalid, isObject, typeError, unknownField, type FcmProblem, type Json } from './fcm-fields.ts';
import { invalidRegistrationToken, isFcmRegistrationToken } from './fcm-token.ts';

/** Accepted (with `warnings` for the record), or Google's INVALID_ARGUMENT. */
export type FcmValidation = { ok: true; token: string | undefined; validateOnly: boolean; warnings: string[] } | FcmProblem;
type Target = { ok: true; token: string | undefined } | FcmProblem;

const BODY_FIELDS = new Set(['message', 'validate_only', 'validateOnly']);
const MESSAGE_FIELDS = new Set([
  'name', 'data', 'notification', 'android', 'webpush', 'apns', 'fcm_options', 'fcmOptions', 'token', 'topic', 'condition',
]);
const NOTIFICATION_FIELDS = new Set(['title', 'body', 'image']);

function checkNotification(value: unknown): FcmProblem | undefined {
  if (!isObject(value)) return typeError('message.notification', 'type.googleapis.com/google.firebase.fcm.v1.Notification', value);
  const extra = Object.keys(value).find((k) => !NOTIFICATION_FIELDS.has(k));
  if (extra !== undefined) return unknownField(extra, 'message.notification');
  const bad = Object.entries(value).find(([, v]) => typeof v !== 'string');
  return bad === undefined ? undefined : typeError(`message.notification.${bad[0]}`, 'TYPE_STRING', bad[1]);
}

function checkParts(message: Json): FcmProblem | undefined {
  const present = (k: string) => message[k] !== undefined;
  const fcmOptions = message['fcm_options'] ?? message['fcmOptions'];
  return (
    (present('data') ? checkData(message['data']) : undefined) ??
    (present('notification') ? checkNotification(message['notification']) : undefined) ??
    (present('android') ? checkAndroid(message['android']) : undefined) ??
    (present('apns') ? checkApns(message['apns'], message) : undefined) ??
    (present('webpush') ? checkWebpush(message['webpush']) : undefined) ??
    (fcmOptions !== undefined && fcmOptions !== null ? checkFcmOptions('FcmOptions')(fcmOptions, 'message.fcm_options') : undefined) ??
    checkPayloadSize(message)
  );
}

function checkTarget(message: Json): Target {
  const targets = (['token', 'topic', 'condition'] as const).filter((k) => message[k] !== undefined);
  if (targets.length === 0) return invalid('Recipient of the message is not set.', 'message');
  if (targets.length > 1) return invalid(`Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set '${targets[1]}'`, 'message');
  const target = targets[0] ?? 'token';
  const value = message[target];
  if (typeof value !== 'string' || value.length === 0) return typeError(`message.${target}`, 'TYPE_STRING', value);
  if (target === 'token' && !isFcmRegistrationToken(value)) return invalidRegistrationToken();
  return { ok: true, token: target === 'token' ? value : undefined };
}

/** Validate a `messages:send` request body the way the FCM v1 API does; errors carry Google-style messages. */
export function validateFcmBody(body: unknown): FcmValidation {
  if (!isObject(body)) return invalid('Invalid JSON payload received. Expected an object.');
  const extraBody = Object.keys(body).find((k) => !BODY_FIELDS.has(k));
  if (extraBody !== undefined) return unknownField(extraBody);
  const message = body['message'];
  if (!isObject(message)) return invalid("Invalid value at 'message' (type.googleapis.com/google.firebase.fcm.v1.Message): message is required", 'message');
  const extra = Object.keys(message).find((k) => !MESSAGE_FIELDS.has(k));
  if (extra !== undefined) return unknownField(extra, 'message');
  const problem = checkParts(message);
  if (problem !== undefined) return problem;
  const target = checkTarget(message);
  if (!target.ok) return target;
  const validateOnly = body['validate_only'] === true || body['validateOnly'] === true;
  return { ok: true, token: target.token, validateOnly, warnings: [...apnsWarnings(message['apns'], message), ...androidWarnings(message)] };
}
