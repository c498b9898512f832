import { z } from 'zod';
import { Instant } from './instant.ts';
import { AppId, UserId } from './push-job.ts';
import { PlatformSchema as Platform } from './device-push.ts';
import { apnsShapedFcmToken, deviceTokenProblem, normalizeDeviceToken, TokenKinds } from './device-token.ts';
import { LocaleTag, TimeZone } from './device-locale.ts';
import type { Platform as PlatformName } from './names.ts';
import { WebPushKeys } from './web-push.ts';
import { VapidPublicKey } from './web-subscription.ts';
import { AppVersion } from './segment-filter.ts';

const Token = z.string().min(1).max(4096);
const EventAt = Instant;

type Problem = { path: string[]; message: string };

/** What is wrong with a token for its platform (device-token.ts), reported on `token`. */
export function deviceTokenProblems(value: { platform: PlatformName; token: string; tokenKind?: string | undefined }): Problem[] {
  const problems: Problem[] = [];
  const problem = deviceTokenProblem(value.platform, value.token);
  if (problem !== undefined) problems.push({ path: ['token'], message: problem });
  if (value.platform !== 'apns' && value.tokenKind !== undefined && value.tokenKind !== 'device') {
    const which = value.platform === 'fcm' ? 'an FCM token' : 'a Web Push subscription';
    problems.push({ path: ['tokenKind'], message: `VoIP and Live Activity tokens are APNs tokens; ${which} is always "device"` });
  }
  return problems;
}

/**
 * What is wrong with a register's previousToken: a token of the platform (web: an endpoint) other
 * than `token` as stored (normalizeDeviceToken: APNs hex in either case is one token). It is only
 * looked up, so an FCM one of an APNs token's shape (registered before that was refused) may be named.
 */
function previousTokenProblems(value: { platform: PlatformName; token: string; previousToken?: string | undefined }): Problem[] {
  if (value.previousToken === undefined) return [];
  const problem = deviceTokenProblem(value.platform, value.previousToken);
  if (problem !== undefined) return [{ path: ['previousToken'], message: `previousToken is ${problem}` }];
  if (normalizeDeviceToken(value.platform, value.previousToken) !== normalizeDeviceToken(value.platform, value.token)) return [];
  return [{ path: ['previousToken'], message: 'previousToken is the token itself: name the token the device held before this one, or leave it out' }];
}

/** A register's token (an FCM one not of an APNs token's shape: apnsShapedFcmToken), its previousToken, and its subscription keys: required for web, refused for APNs and FCM. */
export function registerProblems(value: {
  platform: PlatformName;
  token: string;
  previousToken?: string | undefined;
  tokenKind?: string | undefined;
  keys?: unknown;
  applicationServerKey?: unknown;
}): Problem[] {
  const problems = deviceTokenProblems(value);
  const shaped = problems.length === 0 && value.platform === 'fcm' ? apnsShapedFcmToken(value.token) : undefined;
  if (shaped !== undefined) problems.push({ path: ['token'], message: shaped });
  problems.push(...previousTokenProblems(value));
  if (value.platform === 'web') {
    if (value.keys === undefined) problems.push({ path: ['keys'], message: 'a web registration carries the subscription keys {p256dh, auth} (PushSubscription.toJSON().keys)' });
    return problems;
  }
  const name = value.platform === 'apns' ? 'an APNs' : 'an FCM';
  if (value.keys !== undefined) problems.push({ path: ['keys'], message: `keys belong to a Web Push subscription; ${name} registration has none` });
  if (value.applicationServerKey !== undefined) problems.push({ path: ['applicationServerKey'], message: `applicationServerKey belongs to a Web Push subscription; ${name} registration has none` });
  return problems;
}

const report = (problems: readonly Problem[], ctx: z.RefinementCtx): void => {
  for (const p of problems) ctx.addIssue({ code: 'custom', path: p.path, message: p.message });
};

/** The token must suit its platform (device-token.ts); each door reports it on `token`. */
export function checkDeviceToken(value: { platform: PlatformName; token: string; tokenKind?: string | undefined }, ctx: z.RefinementCtx): void {
  report(deviceTokenProblems(value), ctx);
}

/** checkDeviceToken, and a web registration's keys (registerProblems). */
export function checkRegister(value: Parameters<typeof registerProblems>[0], ctx: z.RefinementCtx): void {
  report(registerProblems(value), ctx);
}

/** The fields of each event; `Registration` adds the token check (other contracts build on these). */
export const RegisterShape = {
  version: z.literal(1).default(1),
  kind: z.literal('register'),
  app: AppId,
  platform: Platform,
  token: Token,
  /**
   * The token this device held before `token` (APNs or FCM gave the app a new one; web: the old
   * subscription's endpoint, from `pushsubscriptionchange`). While it is still the user's, it is
   * invalidated ('replaced') as `token` becomes her device, and the pushes already made for it go to
   * `token` (device-registration.ts). Refused when it is not a token of the platform or is `token`
   * itself; the registrar applies such a register without it.
   */
  previousToken: Token.optional(),
  /** APNs: `voip` for a PushKit token, `liveactivity` for a Live Activity push token, `device`. Absent: the device keeps the one it has (a new one is `device`). */
  tokenKind: z.enum(TokenKinds).optional(),
  userId: UserId,
  /** IANA zone name, e.g. "Europe/Berlin"; used to resolve local delivery times (an unknown zone is refused). Absent: the device keeps the one it has. */
  timezone: TimeZone.optional(),
  /** BCP 47 language tag, e.g. "en-GB". Absent: the device keeps the one it has. */
  locale: LocaleTag.optional(),
  /** The app's version, dotted numeric with an optional suffix ("5.2.1", "5.3.0-beta2"); segments compare its numbers. */
  appVersion: AppVersion.optional(),
  /** When the app was last in use on this device (segments' `lastSeen`); default: eventAt. */
  lastSeenAt: EventAt.optional(),
  /** Web Push only (then required): the subscription's keys; `token` is its endpoint. */
  keys: WebPushKeys.optional(),
  /** Web Push only: the VAPID public key the browser subscribed with (applicationServerKey), so Herald signs with the matching key pair. */
  applicationServerKey: VapidPublicKey.optional(),
  eventAt: EventAt,
};

export const UnregisterShape = {
  version: z.literal(1).default(1),
  kind: z.literal('unregister'),
  app: AppId,
  platform: Platform,
  token: Token,
  /**
   * The user logging out: the unregister applies only while the device is still that user's (else it
   * is stale). Without it, it applies whoever holds the device: a "sign out everywhere" sent from an
   * old list of the user's tokens would switch off a phone that another user has logged in on since.
   */
  userId: UserId.optional(),
  eventAt: EventAt,
};

/**
 * A device registration event. The last event time wins, so an out-of-order "register"
 * cannot resurrect a token that a later "unregister" removed.
 */
export const Registration = z.discriminatedUnion('kind', [
  z.strictObject(RegisterShape).superRefine(checkRegister),
  z.strictObject(UnregisterShape).superRefine(checkDeviceToken),
]);
export type Registration = z.infer<typeof Registration>;
export type RegistrationInput = z.input<typeof Registration>;
