import { reject, type ApsVerdict } from './apns-request.ts';
import { isObject, type Json } from './json.ts';

const EVENTS = new Set(['start', 'update', 'end']);

const isEpochSeconds = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const bad = (warning?: string): ApsVerdict => ({ rejection: reject(400, 'BadPayload'), warnings: warning === undefined ? [] : [warning] });

function checkDates(aps: Json): ApsVerdict | undefined {
  for (const key of ['dismissal-date', 'stale-date']) {
    if (aps[key] !== undefined && !isEpochSeconds(aps[key])) return bad(`aps.${key} must be UNIX epoch seconds`);
  }
  return undefined;
}

/**
 * The `aps` of an `apns-push-type: liveactivity` push. Apple, "Starting and updating Live
 * Activities with ActivityKit push notifications": `timestamp` (UNIX seconds) and `event`
 * (`start`, `update` or `end`) are required; `content-state` carries the new content for start
 * and update (optional for end); a start also needs `attributes-type` and `attributes`, and an
 * `alert` (Apple's start payload carries one; without it APNs answers 200 and the device starts
 * nothing, which the sandbox notes);
 * `dismissal-date` and `stale-date` are UNIX seconds. Apple documents no APNs reason for a
 * malformed Live Activity body; the sandbox answers BadPayload (the warning says which rule).
 */
export function checkLiveActivityAps(aps: Json): ApsVerdict {
  const event = aps['event'];
  if (typeof event !== 'string' || !EVENTS.has(event)) return bad('aps.event must be "start", "update" or "end"');
  if (!isEpochSeconds(aps['timestamp'])) return bad('aps.timestamp (UNIX epoch seconds) is required');
  const state = aps['content-state'];
  if (event !== 'end' && !isObject(state)) return bad(`aps.content-state is required for a Live Activity ${event}`);
  if (state !== undefined && !isObject(state)) return bad('aps.content-state must be a dictionary');
  if (event === 'start' && (typeof aps['attributes-type'] !== 'string' || !isObject(aps['attributes']))) {
    return bad('a Live Activity start needs aps.attributes-type and aps.attributes');
  }
  const dates = checkDates(aps);
  if (dates !== undefined) return dates;
  const warnings = aps['dismissal-date'] !== undefined && event !== 'end' ? ['aps.dismissal-date only applies to an end event'] : [];
  // Accepted as APNs accepts it; the device is what drops it.
  if (event === 'start' && aps['alert'] === undefined) warnings.push('a Live Activity start without aps.alert: the device starts no activity');
  return { warnings };
}
