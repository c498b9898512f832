import type { DevicePush, Platform } from '@herald/contracts';
import type { PushProvider, Refusal } from './push-provider.ts';

/**
 * The process-level provider of a pusher told to run without credentials of its own
 * (APNS_APP_CREDENTIALS_ONLY, FCM_APP_CREDENTIALS_ONLY: a deployment where every app brings its own
 * through the admin API).
 * Apps with their own credentials send through their own providers; a push of an app without them
 * is refused as permanent, parked `provider-rejected` with this reason (which bans no app). Before,
 * such a pusher went for the local sandbox's sandbox.json, could not start, and every app's pushes waited.
 */
export function createUncredentialedProvider(platform: Extract<Platform, 'apns' | 'fcm'>, settings: string): PushProvider {
  const label = platform === 'apns' ? 'APNs' : 'FCM';
  const refuse = (push: DevicePush): Refusal => ({ kind: 'permanent', reason: `no-credentials: app "${push.app}" has no ${label} credentials of its own and this pusher has none (${settings})`, notSent: true });
  return {
    platform,
    // Refused before the rate limiter is asked (prepare): no budget, no provider request.
    prepare: refuse,
    send: async (push) => refuse(push),
    close: async () => undefined,
  };
}
