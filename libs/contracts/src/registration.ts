import { z } from 'zod';
import { AppId, UserId } from './push-job.ts';
import { PlatformSchema as Platform } from './device-push.ts';

const Token = z.string().min(1).max(4096);
const EventAt = z.iso.datetime({ offset: true });

/**
 * A device registration event. The last event time wins, so an out-of-order "register"
 * cannot resurrect a token that a later "unregister" removed.
 */
export const Registration = z.discriminatedUnion('kind', [
  z.strictObject({
    version: z.literal(1).default(1),
    kind: z.literal('register'),
    app: AppId,
    platform: Platform,
    token: Token,
    userId: UserId,
    /** IANA zone name, e.g. "Europe/Berlin"; used to resolve local delivery times. */
    timezone: z.string().min(1).max(64).optional(),
    locale: z.string().min(2).max(35).optional(),
    eventAt: EventAt,
  }),
  z.strictObject({
    version: z.literal(1).default(1),
    kind: z.literal('unregister'),
    app: AppId,
    platform: Platform,
    token: Token,
    eventAt: EventAt,
  }),
]);
export type Registration = z.infer<typeof Registration>;
export type RegistrationInput = z.input<typeof Registration>;
