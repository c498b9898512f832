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

function checkTopic(headers: Headers): ApnsRejection | undefined {
  const topic = header(headers, 'apns-topic');
  if (topic === undefined || topic.length === 0) return reject(400, 'MissingTopic');
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
 * At most 64 bytes, printable ASCII only. Node decodes HTTP/2 header values as Latin-1, one
 * character per byte, so the string length is the byte count on the wire; a client's "€" or emoji
 * arrives as bytes outside 0x20–0x7e (garbled), which is refused rather than silently counted.
 */
export function isValidCollapseId(value: string): boolean {
  return value.length <= MAX_COLLAPSE_ID_BYTES && /^[\x20-\x7e]*$/.test(value);
}

/** Header checks of an authenticated request, in the order the sandbox applies them. */
export function checkApnsHeaders(headers: Headers): ApnsRejection | undefined {
  const topic = checkTopic(headers);
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

/** Accepted but worth a look: what Apple recommends without making it an error. */
export function apnsHeaderWarnings(headers: Headers): string[] {
  const warnings: string[] = [];
  const pushType = header(headers, 'apns-push-type');
  if (pushType === undefined) {
    warnings.push('apns-push-type missing: Apple requires it for watchOS and recommends it for every platform');
  }
  if (pushType === 'background' && header(headers, 'apns-priority') === undefined) {
    warnings.push('background push without apns-priority: APNs then uses 10, and Apple says to always use 5 for background pushes');
  }
  return warnings;
}
