import type { VapidCredentials } from '@herald/providers';

/** The web-pusher's WEB_PUSH_VAPID_* settings (each undefined when unset). */
export interface ProcessVapidSettings {
  WEB_PUSH_VAPID_PUBLIC_KEY?: string | undefined;
  WEB_PUSH_VAPID_PRIVATE_KEY?: string | undefined;
  WEB_PUSH_VAPID_SUBJECT?: string | undefined;
}

/**
 * The web-pusher's process-level VAPID pair: all three variables, or none (then apps without their
 * own keys park as `no-vapid-keys`). It signs for apps without keys of their own, and, in an app's
 * own provider, the subscriptions the app had before it got them (ADR 0014).
 */
export function processVapid(config: ProcessVapidSettings): VapidCredentials | undefined {
  const { WEB_PUSH_VAPID_PUBLIC_KEY: publicKey, WEB_PUSH_VAPID_PRIVATE_KEY: privateKey, WEB_PUSH_VAPID_SUBJECT: subject } = config;
  const set = [publicKey, privateKey, subject].filter((v) => v !== undefined).length;
  if (set === 0) return undefined;
  if (publicKey === undefined || privateKey === undefined || subject === undefined) {
    throw new Error('set WEB_PUSH_VAPID_PUBLIC_KEY, WEB_PUSH_VAPID_PRIVATE_KEY and WEB_PUSH_VAPID_SUBJECT together, or none of them');
  }
  return { subject, current: { publicKey, privateKey } };
}
