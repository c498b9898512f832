import { googleError, type GoogleError } from './google-errors.ts';

export type FcmValidation = { ok: true; token: string | undefined; validateOnly: boolean } | { ok: false; error: GoogleError };

type Json = Record<string, unknown>;

const BODY_FIELDS = new Set(['message', 'validate_only', 'validateOnly']);
const MESSAGE_FIELDS = new Set([
  'name', 'data', 'notification', 'android', 'webpush', 'apns', 'fcm_options', 'fcmOptions', 'token', 'topic', 'condition',
]);
const NOTIFICATION_FIELDS = new Set(['title', 'body', 'image']);
const ANDROID_PRIORITIES = new Set(['HIGH', 'NORMAL']);
const DURATION = /^\d+(\.\d{1,9})?s$/;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const invalid = (message: string): FcmValidation => ({ ok: false, error: googleError('INVALID_ARGUMENT', message) });
const unknownField = (name: string, at?: string): FcmValidation =>
  invalid(`Invalid JSON payload received. Unknown name "${name}"${at === undefined ? '' : ` at '${at}'`}: Cannot find field.`);

function checkStringMap(value: unknown, at: string): FcmValidation | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) return invalid(`Invalid value at '${at}' (type.googleapis.com/google.protobuf.Map), ${JSON.stringify(value)}`);
  const entries = Object.entries(value);
  const index = entries.findIndex(([, v]) => typeof v !== 'string');
  if (index >= 0) return invalid(`Invalid value at '${at}[${index}].value' (TYPE_STRING), ${JSON.stringify(entries[index]?.[1])}`);
  return undefined;
}

function checkNotification(value: unknown): FcmValidation | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) return invalid(`Invalid value at 'message.notification' (type.googleapis.com/google.firebase.fcm.v1.Notification), ${JSON.stringify(value)}`);
  const extra = Object.keys(value).find((k) => !NOTIFICATION_FIELDS.has(k));
  if (extra !== undefined) return unknownField(extra, 'message.notification');
  const bad = Object.entries(value).find(([, v]) => typeof v !== 'string');
  return bad === undefined ? undefined : invalid(`Invalid value at 'message.notification.${bad[0]}' (TYPE_STRING), ${JSON.stringify(bad[1])}`);
}

function checkAndroid(value: unknown): FcmValidation | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) return invalid(`Invalid value at 'message.android' (type.googleapis.com/google.firebase.fcm.v1.AndroidConfig), ${JSON.stringify(value)}`);
  const priority = value['priority'];
  if (priority !== undefined && (typeof priority !== 'string' || !ANDROID_PRIORITIES.has(priority.toUpperCase()))) {
    return invalid(`Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), ${JSON.stringify(priority)}`);
  }
  const ttl = value['ttl'];
  if (ttl !== undefined && (typeof ttl !== 'string' || !DURATION.test(ttl))) {
    return invalid(`Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), ${JSON.stringify(ttl)}`);
  }
  const collapseKey = value['collapse_key'] ?? value['collapseKey'];
  if (collapseKey !== undefined && typeof collapseKey !== 'string') {
    return invalid(`Invalid value at 'message.android.collapse_key' (TYPE_STRING), ${JSON.stringify(collapseKey)}`);
  }
  if (value['notification'] !== undefined && !isObject(value['notification'])) {
    return invalid(`Invalid value at 'message.android.notification' (type.googleapis.com/google.firebase.fcm.v1.AndroidNotification), ${JSON.stringify(value['notification'])}`);
  }
  return checkStringMap(value['data'], 'message.android.data');
}

function checkApns(value: unknown): FcmValidation | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) return invalid(`Invalid value at 'message.apns' (type.googleapis.com/google.firebase.fcm.v1.ApnsConfig), ${JSON.stringify(value)}`);
  const headers = checkStringMap(value['headers'], 'message.apns.headers');
  if (headers !== undefined) return headers;
  const payload = value['payload'];
  if (payload !== undefined && !isObject(payload)) return invalid(`Invalid value at 'message.apns.payload' (type.googleapis.com/google.protobuf.Struct), ${JSON.stringify(payload)}`);
  return undefined;
}

function checkTarget(message: Json): FcmValidation {
  const targets = (['token', 'topic', 'condition'] as const).filter((k) => message[k] !== undefined);
  if (targets.length === 0) return invalid('Recipient of the message is not set.');
  if (targets.length > 1) return invalid(`Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set '${targets[1]}'`);
  const target = targets[0] ?? 'token';
  const value = message[target];
  if (typeof value !== 'string' || value.length === 0) return invalid(`Invalid value at 'message.${target}' (TYPE_STRING), ${JSON.stringify(value)}`);
  return { ok: true, token: target === 'token' ? value : undefined, validateOnly: false };
}

/** Validate a `messages:send` request body the way the FCM v1 API does; errors carry Google-style messages. */
export function validateFcmBody(body: unknown): FcmValidation {
  if (!isObject(body)) return invalid('Invalid JSON payload received. Expected an object.');
  const extraBody = Object.keys(body).find((k) => !BODY_FIELDS.has(k));
  if (extraBody !== undefined) return unknownField(extraBody);
  const message = body['message'];
  if (!isObject(message)) return invalid("Invalid value at 'message' (type.googleapis.com/google.firebase.fcm.v1.Message): message is required");
  const extra = Object.keys(message).find((k) => !MESSAGE_FIELDS.has(k));
  if (extra !== undefined) return unknownField(extra, 'message');
  if (message['webpush'] !== undefined && !isObject(message['webpush'])) {
    return invalid(`Invalid value at 'message.webpush' (type.googleapis.com/google.firebase.fcm.v1.WebpushConfig), ${JSON.stringify(message['webpush'])}`);
  }
  const problem =
    checkStringMap(message['data'], 'message.data') ?? checkNotification(message['notification']) ?? checkAndroid(message['android']) ?? checkApns(message['apns']);
  if (problem !== undefined) return problem;
  const target = checkTarget(message);
  if (!target.ok) return target;
  return { ...target, validateOnly: body['validate_only'] === true || body['validateOnly'] === true };
}
