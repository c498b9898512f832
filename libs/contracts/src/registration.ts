import { z } from 'zod';
import { AppId, UserId } from './push-job.ts';
import { PlatformSchema as Platform } from './device-push.ts';
import { deviceTokenProblem, TokenKinds } from './device-token.ts';
import { LocaleTag, TimeZone } from './device-locale.ts';

const Token = z.string().min(1).max(4096);
const EventAt = z.iso.datetime({ offset: true });

/** The token must suit its platform (device-token.ts); each door reports it on `token`. */
export function checkDeviceToken(value: { platform: 'apns' | 'fcm'; token: string; tokenKind?: string | undefined }, ctx: z.RefinementCtx): void {
  const problem = deviceTokenProblem(value.platform, value.token);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['token'], message: problem });
  if (value.platform === 'fcm' && value.tokenKind !== undefined && value.tokenKind !== 'device') {
    ctx.addIssue({ code: 'custom', path: ['tokenKind'], message: 'VoIP and Live Activity tokens are APNs tokens; an FCM token is always "device"' });
  }
}

/** The fields of each event; `Registration` adds the token check (other contracts build on these). */
export const RegisterShape = {
  version: z.literal(1).default(1),
  kind: z.literal('register'),
  app: AppId,
  platform: Platform,
  token: Token,
  /** APNs: `voip` for a PushKit token, `liveactivity` for a Live Activity push token; default `device`. */
  tokenKind: z.enum(TokenKinds).optional(),
  userId: UserId,
  /** IANA zone name, e.g. "Europe/Berlin"; used to resolve local delivery times (an unknown zone is refused). */
  timezone: TimeZone.optional(),
  /** BCP 47 language tag, e.g. "en-GB". */
  locale: LocaleTag.optional(),
  eventAt: EventAt,
};

export const UnregisterShape = {
  version: z.literal(1).default(1),
  kind: z.literal('unregister'),
  app: AppId,
  platform: Platform,
  token: Token,
  eventAt: EventAt,
};

/**
 * A device registration event. The last event time wins, so an out-of-order "register"
 * cannot resurrect a token that a later "unregister" removed.
 */
export const Registration = z.discriminatedUnion('kind', [
  z.strictObject(RegisterShape).superRefine(checkDeviceToken),
  z.strictObject(UnregisterShape).superRefine(checkDeviceToken),
]);
export type Registration = z.infer<typeof Registration>;
export type RegistrationInput = z.input<typeof Registration>;
