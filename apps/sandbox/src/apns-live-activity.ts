import type { ApsVerdict } from './apns-request.ts';
import { isObject, type Json } from './json.ts';

const EVENTS = new Set(['start', 'update', 'end']);

const isEpochSeconds = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** `content-state` (start and update need one), `attributes-type` and `attributes` (start). */
function contentProblems(aps: Json, event: string | undefined): string[] {
  const problems: string[] = [];
  const state = aps['content-state'];
  if (state === undefined && event !== undefined && event !== 'end') problems.push(`aps.content-state is required for a Live Activity ${event}`);
  if (state !== undefined && !isObject(state)) problems.push('aps.content-state must be a dictionary');
  if (event === 'start' && (typeof aps['attributes-type'] !== 'string' || !isObject(aps['attributes']))) {
    problems.push('a Live Activity start needs aps.attributes-type and aps.attributes');
  }
  return problems;
}

/**
 * The `aps` of an `apns-push-type: liveactivity` push. Apple, "Starting and updating Live
 * Activities with ActivityKit push notifications": `timestamp` (UNIX seconds) and `event`
 * (`start`, `update` or `end`) are required; `content-state` carries the new content for start
 * and update (optional for end); a start also needs `attributes-type` and `attributes`, and an
 * `alert` (Apple's start payload carries one; without it APNs answers 200 and the device starts
 * nothing); `dismissal-date` and `stale-date` are UNIX seconds. The alert of a start or update is a
 * dictionary of `title`, `body` and `sound` (Apple's example: `"sound": "chime.aiff"`; ActivityKit's
 * AlertConfiguration(title:body:sound:)): Apple's Live Activity payload has no `aps.sound`. Apple's response table lists no
 * reason for a malformed Live Activity body, so APNs' answer is not documented: the sandbox accepts
 * it (200) and says in its warnings which rule it breaks.
 */
export function checkLiveActivityAps(aps: Json): ApsVerdict {
  const given = aps['event'];
  const event = typeof given === 'string' && EVENTS.has(given) ? given : undefined;
  const warnings: string[] = [];
  if (event === undefined) warnings.push('aps.event must be "start", "update" or "end"');
  if (!isEpochSeconds(aps['timestamp'])) warnings.push('aps.timestamp (UNIX epoch seconds) is required');
  warnings.push(...contentProblems(aps, event));
  for (const key of ['dismissal-date', 'stale-date']) {
    if (aps[key] !== undefined && !isEpochSeconds(aps[key])) warnings.push(`aps.${key} must be UNIX epoch seconds`);
  }
  if (aps['dismissal-date'] !== undefined && event !== undefined && event !== 'end') warnings.push('aps.dismissal-date only applies to an end event');
  // As APNs answers it; the device is what drops it.
  if (event === 'start' && aps['alert'] === undefined) warnings.push('a Live Activity start without aps.alert: the device starts no activity');
  if (aps['sound'] !== undefined) warnings.push("a Live Activity's sound goes in aps.alert, with its title and body (Apple's ActivityKit payload), not in aps.sound");
  return { warnings };
}
