import { createECDH } from 'node:crypto';
import { p256PointProblem } from '@herald/contracts';
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
  const problem = vapidPairProblem(publicKey, privateKey);
  if (problem !== undefined) throw new Error(problem);
  return { subject, current: { publicKey, privateKey } };
}

/**
 * Why two keys are no VAPID pair: a public key off the P-256 curve, or one the private key does not
 * make (two generate-vapid-keys runs pasted together). Started with such a pair, the web-pusher had
 * every push of apps without keys of their own refused by the push services and parked, the
 * refusal blamed on the subject.
 */
export function vapidPairProblem(publicKey: string, privateKey: string): string | undefined {
  const point = p256PointProblem(Buffer.from(publicKey, 'base64url'));
  if (point !== undefined) return `WEB_PUSH_VAPID_PUBLIC_KEY ${point}`;
  const ecdh = createECDH('prime256v1');
  try {
    ecdh.setPrivateKey(Buffer.from(privateKey, 'base64url'));
  } catch (err) {
    return `WEB_PUSH_VAPID_PRIVATE_KEY is no P-256 private key: ${(err as Error).message}`;
  }
  if (!ecdh.getPublicKey().equals(Buffer.from(publicKey, 'base64url'))) {
    return 'WEB_PUSH_VAPID_PUBLIC_KEY is not the public key of WEB_PUSH_VAPID_PRIVATE_KEY: set the two keys of one pair (web-push generate-vapid-keys prints both)';
  }
  return undefined;
}
