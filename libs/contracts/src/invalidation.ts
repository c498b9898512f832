import { z } from 'zod';
import { Instant } from './instant.ts';
import { AppId } from './push-job.ts';
import { PlatformSchema as Platform } from './device-push.ts';

/** A provider said this token is dead. Published by pushers, consumed by invalidators. */
export const Invalidation = z.strictObject({
  version: z.literal(1).default(1),
  platform: Platform,
  app: AppId,
  token: z.string().min(1).max(4096),
  /** The provider's reason, e.g. "Unregistered", "BadDeviceToken", "UNREGISTERED". */
  reason: z.string().min(1).max(200),
  /** APNs 410 says since when the token has been invalid; a later registration keeps it alive. */
  invalidSince: Instant.optional(),
  observedAt: Instant,
  pushId: z.string().optional(),
});
export type Invalidation = z.infer<typeof Invalidation>;
