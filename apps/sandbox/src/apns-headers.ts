import { header, reject, type ApnsRejection, type Headers } from './apns-request.ts';
import { topicFitsPushType } from './apns-topic.ts';

// Rules from Apple, "Sending notification requests to APNs" (header table) unless noted.
const PUSH_TYPES = new Set([
  'alert', 'background', 'location', 'voip', 'complication', 'fileprovider', 'mdm', 'liveactivity', 'pushtotalk', 'widgets', 'controls',
]);
/** apns-priority: 10, 5 or 1. */
const PRIORITIES = new Set(['10', '5', '1']);
/** apns-collapse-id: "The value of this key must not exceed 64 bytes." */
const MAX_COLLAPSE_ID_BYTES = 64;
/** apns-id: "a canonical UUID ... 8-4-4-4-12". */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** apns-expiration: "a UNIX epoch expressed in seconds (UTC)"; 0 = deliver once, don't store. */
const EPOCH_SECONDS = /^\d+$/;

/** `apns-topic` as sent; an empty value counts as none. */
function givenTopic(headers: Headers): string | undefined {
  const topic = header(headers, 'apns-topic');
  return topic === undefined || topic.length === 0 ? undefined : topic;
}

/**
 * `apns-topic`: "(Required for token-based authentication)"; over a certificate, "If you omit this
 * request header and your APNs certificate does not specify multiple topics, the APNs server uses
 * the certificate's Subject as the default topic" (`certificateTopic`, given only for a
 * certificate-authenticated request). MissingTopic: "The apns-topic header of the request isn't
 * specified and is required."
 */
function checkTopic(headers: Headers, certificateTopic: string | undefined): ApnsRejection | undefined {
  const topic = givenTopic(headers) ?? certificateTopic;
  if (topic === undefined) return reject(400, 'MissingTopic');
  const pushType = header(headers, 'apns-push-type');
  if (pushType !== undefined && !PUSH_TYPES.has(pushType)) return reject(400, 'InvalidPushType');
  if (!topicFitsPushType(topic, pushType)) return reject(400, 'TopicDisallowed');
  return undefined;
}

/**
 * `background`: "Always use priority 5. Using priority 10 is an error." (header table).
 * `liveactivity`: priority 5 or 10 (Apple, "Starting and updating Live Activities with ActivityKit
 * push notifications"), so 1 is refused.
 */
function checkPriority(priority: string | undefined, pushType: string | undefined): ApnsRejection | undefined {
  if (priority === undefined) return undefined;
  if (!PRIORITIES.has(priority)) return reject(400, 'BadPriority');
  if (pushType === 'background' && priority === '10') return reject(400, 'BadPriority');
  if (pushType === 'liveactivity' && priority === '1') return reject(400, 'BadPriority');
  return undefined;
}

/**
 * Apple's only rule: "The value of this key must not exceed 64 bytes." Node decodes HTTP/2 header
 * values as Latin-1, one character per byte, so the string length is the byte count on the wire
 * (a "€" sent as UTF-8 arrives as three characters and counts three bytes).
 */
export function isValidCollapseId(value: string): boolean {
  return value.length <= MAX_COLLAPSE_ID_BYTES;
}

/**
 * Header checks of an authenticated request, in the order the sandbox applies them;
 * `certificateTopic`: the client certificate's topic, for a certificate-authenticated request.
 */
export function checkApnsHeaders(headers: Headers, certificateTopic?: string): ApnsRejection | undefined {
  const topic = checkTopic(headers, certificateTopic);
  if (topic !== undefined) return topic;
  const priority = checkPriority(header(headers, 'apns-priority'), header(headers, 'apns-push-type'));
  if (priority !== undefined) return priority;
  const expiration = header(headers, 'apns-expiration');
  if (expiration !== undefined && !EPOCH_SECONDS.test(expiration)) return reject(400, 'BadExpirationDate');
  const collapseId = header(headers, 'apns-collapse-id');
  if (collapseId !== undefined && !isValidCollapseId(collapseId)) return reject(400, 'BadCollapseId');
  const apnsId = header(headers, 'apns-id');
  if (apnsId !== undefined && !UUID.test(apnsId)) return reject(400, 'BadMessageId');
  return undefined;
}

/**
 * Accepted but worth a look: what Apple recommends without making it an error. A background push
 * at priority 1 is one: the header table says "Always use priority 5" for background pushes and
 * makes only 10 an error, and priority 1 puts the device's power first and does not wake it.
 */
export function apnsHeaderWarnings(headers: Headers, certificateTopic?: string): string[] {
  const warnings: string[] = [];
  if (givenTopic(headers) === undefined && certificateTopic !== undefined) {
    warnings.push(`apns-topic missing: APNs uses the client certificate's topic (${certificateTopic}); Apple requires apns-topic with token-based authentication`);
  }
  const pushType = header(headers, 'apns-push-type');
  if (pushType === undefined) {
    warnings.push('apns-push-type missing: Apple requires it for watchOS and recommends it for every platform');
  }
  const priority = header(headers, 'apns-priority');
  if (pushType === 'background' && priority === undefined) {
    warnings.push('background push without apns-priority: APNs then uses 10, and Apple says to always use 5 for background pushes');
  }
  if (pushType === 'background' && priority === '1') {
    warnings.push('background push at apns-priority 1: Apple says to always use priority 5 for background pushes; 1 also keeps the device from waking');
  }
  return warnings;
}
