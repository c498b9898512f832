import { collapseKeyProblem, MAX_EPOCH_SECONDS } from '@herald/contracts';
import type { ApnsRequestParts } from './apns-notification.ts';
import { isObject } from './merge-json.ts';

/**
 * Apple's rules for a notification request, from "Sending notification requests to APNs" and
 * "Generating a remote notification" (rows in PROVIDER-RULES.md, each pinned by apns-rules.spec.ts).
 */

/** Payload limit of every push type but VoIP. */
export const APNS_MAX_PAYLOAD_BYTES = 4096;
/** VoIP payload limit. */
export const APNS_MAX_VOIP_PAYLOAD_BYTES = 5120;

/**
 * How long Herald lets a provider store a push that has no expiry: FCM's maximum (4 weeks).
 * Apple publishes no maximum ("stores it for a limited period"), so the same value asks Apple to
 * store it for as long as Apple does.
 */
export const HERALD_MAX_STORAGE_S = 28 * 24 * 3600;

/** apns-topic per push type: the bundle id, plus Apple's suffix for push types that need one. */
const TOPIC_SUFFIX: Record<string, string> = {
  voip: '.voip',
  liveactivity: '.push-type.liveactivity',
  complication: '.complication',
  fileprovider: '.pushkit.fileprovider',
  location: '.location-query',
  pushtotalk: '.voip-ptt',
};

/**
 * The app's topic is its bundle id, which may itself end like a suffix (`com.acme.voip` is a bundle
 * id like any other): its VoIP topic is `com.acme.voip.voip`, and its alerts go to `com.acme.voip`.
 */
export function apnsTopicFor(bundleId: string, pushType: string): string {
  return `${bundleId}${TOPIC_SUFFIX[pushType] ?? ''}`;
}

/**
 * A warning for a stored topic that ends in one of Apple's suffixes: most likely a push type's topic
 * given where the bundle id belongs (before 2026-12-04 Herald took `com.acme.app.voip` as the VoIP
 * topic itself; it now appends the suffix to whatever is stored). Undefined for any other topic.
 */
export function suffixedTopicWarning(app: string, topic: string | null | undefined): string | undefined {
  const entry = Object.entries(TOPIC_SUFFIX).find(([, suffix]) => topic?.endsWith(suffix) === true);
  if (topic == null || entry === undefined) return undefined;
  const [pushType, suffix] = entry;
  return `app "${app}": its APNs topic "${topic}" ends in "${suffix}", and Herald appends Apple's suffix per push type itself: its ${pushType} pushes go to "${apnsTopicFor(topic, pushType)}". If "${topic}" is not the bundle id, set the bundle id: herald apps update ${app} --apns-topic ${topic.slice(0, -suffix.length)}`;
}

export const apnsPayloadLimit = (pushType: string): number => (pushType === 'voip' ? APNS_MAX_VOIP_PAYLOAD_BYTES : APNS_MAX_PAYLOAD_BYTES);

export const apnsPayloadBytes = (payload: object): number => Buffer.byteLength(JSON.stringify(payload), 'utf8');

type Json = Record<string, unknown>;

/** Apple's rule for a background push's aps, directly or through FCM: content-available, nothing shown. */
export function backgroundApsProblem(aps: Json): string | undefined {
  if (aps['content-available'] !== 1) return 'a background push needs aps.content-available: 1';
  const shown = ['alert', 'badge', 'sound'].filter((k) => aps[k] !== undefined);
  return shown.length > 0 ? `a background push must not carry aps.${shown.join(', aps.')}` : undefined;
}

function backgroundProblem(parts: ApnsRequestParts, aps: Json): string | undefined {
  // Apple's header table: "Always use priority 5. Using priority 10 is an error." 1 would also keep the device from waking.
  if (parts.priority !== 5) return `a background push must use apns-priority 5 (Apple: "Always use priority 5"), not ${parts.priority}`;
  return backgroundApsProblem(aps);
}

/**
 * Apple, "Starting and updating Live Activities with ActivityKit push notifications": event and
 * timestamp always; content-state a dictionary (start, update; optional for end); a start's
 * attributes-type and attributes; dismissal-date and stale-date in epoch seconds. APNs answers a
 * body that breaks them 200 and the device shows nothing, so they are checked here.
 */
function liveActivityProblem(parts: ApnsRequestParts, aps: Json): string | undefined {
  if (parts.priority === 1) return 'a Live Activity push must use apns-priority 5 or 10';
  const event = String(aps['event']);
  if (!['start', 'update', 'end'].includes(event)) return 'a Live Activity push needs aps.event start, update or end';
  if (typeof aps['timestamp'] !== 'number') return 'a Live Activity push needs aps.timestamp (epoch seconds)';
  const inMs = ['timestamp', 'dismissal-date', 'stale-date'].find((k) => typeof aps[k] === 'number' && aps[k] > MAX_EPOCH_SECONDS);
  if (inMs !== undefined) return `aps.${inMs} must be epoch seconds; this looks like milliseconds`;
  const state = aps['content-state'];
  if (event !== 'end' && state === undefined) return 'a Live Activity push needs aps.content-state';
  if (state !== undefined && !isObject(state)) return 'aps.content-state must be a dictionary';
  if (event === 'start' && (typeof aps['attributes-type'] !== 'string' || !isObject(aps['attributes']))) return 'a Live Activity start needs aps.attributes-type and aps.attributes';
  const date = ['dismissal-date', 'stale-date'].find((k) => aps[k] !== undefined && typeof aps[k] !== 'number');
  return date === undefined ? undefined : `aps.${date} must be epoch seconds`;
}

/**
 * Apple's rules for the request Herald is about to send (after any override); a reason, or
 * undefined. `size`: the payload's bytes, when its JSON text is at hand already.
 */
export function apnsRequestProblem(parts: ApnsRequestParts, size = apnsPayloadBytes(parts.payload)): string | undefined {
  const limit = apnsPayloadLimit(parts.pushType);
  if (size > limit) return `payload too large: APNs ${parts.pushType} payload is ${size} bytes, the limit is ${limit}`;
  if (parts.collapseId !== undefined) {
    const problem = collapseKeyProblem(parts.collapseId);
    if (problem !== undefined) return `apns-collapse-id ${problem}`;
  }
  if (!Number.isInteger(parts.expiration) || parts.expiration < 0) return 'apns-expiration must be epoch seconds';
  const aps = parts.payload['aps'];
  if (typeof aps !== 'object' || aps === null || Array.isArray(aps)) return 'the payload needs an aps dictionary';
  if (parts.pushType === 'background') return backgroundProblem(parts, aps as Json);
  if (parts.pushType === 'liveactivity') return liveActivityProblem(parts, aps as Json);
  return undefined;
}
