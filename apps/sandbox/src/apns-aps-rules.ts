import type { ApsVerdict } from './apns-request.ts';
import type { Json } from './json.ts';
import { checkLiveActivityAps } from './apns-live-activity.ts';

/** Keys that make the system show something: an alert, a sound, a badge. */
const USER_VISIBLE = ['alert', 'sound', 'badge'] as const;

const visibleKeys = (aps: Json): string[] => USER_VISIBLE.filter((k) => aps[k] !== undefined);

/**
 * Apple, "Pushing background updates to your App": "create a remote notification with an aps
 * dictionary that includes only the content-available key ... the aps dictionary must not contain
 * any keys that would trigger user interactions." Apple's response table lists no reason for
 * breaking this, so APNs' answer is not documented: the sandbox accepts the push (200) and says in
 * its warnings which rule it breaks (no content-available 1, something to show, other keys).
 */
function checkBackgroundAps(aps: Json): ApsVerdict {
  const warnings: string[] = [];
  if (aps['content-available'] !== 1) warnings.push('a background push needs aps.content-available = 1');
  const visible = visibleKeys(aps);
  if (visible.length > 0) warnings.push(`a background push must not contain aps.${visible.join(', aps.')}`);
  const others = Object.keys(aps).filter((k) => k !== 'content-available' && !visible.includes(k));
  if (others.length > 0) warnings.push(`background aps should include only content-available (also has ${others.join(', ')})`);
  return { warnings };
}

/**
 * An `alert` push with no alert, sound or badge is accepted, but the phone shows nothing. A critical
 * alert (interruption-level critical) whose sound is a file name is accepted too, and plays as a
 * regular sound: Apple's sound key, "For critical alerts, use the sound dictionary instead".
 */
function checkAlertAps(aps: Json): ApsVerdict {
  const warnings: string[] = [];
  if (visibleKeys(aps).length === 0) warnings.push('alert push with no aps.alert, aps.sound or aps.badge: the phone shows nothing');
  if (aps['interruption-level'] === 'critical' && typeof aps['sound'] === 'string') {
    warnings.push('a critical alert\'s aps.sound is a file name: Apple asks for the sound dictionary { critical: 1, name, volume } (played as a regular sound otherwise)');
  }
  return { warnings };
}

/** The content rules of the `aps` dictionary for the request's push type. */
export function checkAps(pushType: string | undefined, aps: Json): ApsVerdict {
  if (pushType === 'background') return checkBackgroundAps(aps);
  if (pushType === 'alert') return checkAlertAps(aps);
  if (pushType === 'liveactivity') return checkLiveActivityAps(aps);
  return { warnings: [] };
}
