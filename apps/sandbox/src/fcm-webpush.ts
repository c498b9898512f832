import { checkStringMap } from './fcm-data.ts';
import { checkFields, isObject, isString, scalar, typeError, type FcmProblem, type FieldCheck } from './fcm-fields.ts';

const text = scalar(isString, 'TYPE_STRING');

/** A message type of the v1 reference: an object whose fields are all in `table`. */
export const messageOf = (type: string, table: Readonly<Record<string, FieldCheck>>): FieldCheck => (v, at) =>
  isObject(v) ? checkFields(v, at, table) : typeError(at, `type.googleapis.com/google.firebase.fcm.v1.${type}`, v);

/** FcmOptions (message.fcm_options) and AndroidFcmOptions: `analytics_label` only. */
export const checkFcmOptions = (type: 'FcmOptions' | 'AndroidFcmOptions'): FieldCheck => messageOf(type, { analytics_label: text });

/** ApnsFcmOptions: `analytics_label` and `image`. */
export const checkApnsFcmOptions: FieldCheck = messageOf('ApnsFcmOptions', { analytics_label: text, image: text });

/** WebpushFcmOptions.link: "The link to open when the user clicks on the notification. For all URL values, HTTPS is required." */
const checkLink: FieldCheck = (v, at) => {
  if (!isString(v)) return typeError(at, 'TYPE_STRING', v);
  return /^https:\/\//i.test(v) ? undefined : typeError(at, 'TYPE_STRING', v, 'HTTPS is required');
};

/** The fields of WebpushConfig in the FCM v1 reference, by proto name. */
const FIELDS: Readonly<Record<string, FieldCheck>> = {
  headers: checkStringMap,
  data: checkStringMap,
  notification: scalar(isObject, 'type.googleapis.com/google.protobuf.Struct'),
  fcm_options: messageOf('WebpushFcmOptions', { link: checkLink, analytics_label: text }),
};

/** `message.webpush`: known fields, string headers and data, a Struct notification, an HTTPS link. */
export function checkWebpush(value: unknown): FcmProblem | undefined {
  return messageOf('WebpushConfig', FIELDS)(value, 'message.webpush');
}
