import type { DevicePush } from '@herald/contracts';
import type { ProxySettings } from './settings.ts';

/** One VAPID key pair (RFC 8292), base64url as `web-push`'s generateVAPIDKeys() gives them. */
export interface VapidKeyPair {
  /** The uncompressed P-256 public key (65 bytes): the applicationServerKey browsers subscribe with. */
  publicKey: string;
  /** The 32-byte private scalar. */
  privateKey: string;
}

/** An application server's VAPID identity: its contact and its key pair, plus the one before the last rotation. */
export interface VapidCredentials {
  /** RFC 8292 §2.1 `sub`: a mailto: or https: URL where the push service can reach the operator. */
  subject: string;
  current: VapidKeyPair;
  /** Kept after a rotation so subscriptions made under the old key still get a matching signature. */
  previous?: VapidKeyPair;
}

/** How the Web Push provider signs and reaches push services. */
export interface WebPushSettings {
  /** Without keys every push is refused for good (`no-vapid-keys`): browsers' push services require VAPID. */
  vapid?: VapidCredentials;
  /**
   * An app's own provider: the web-pusher's process pair (WEB_PUSH_VAPID_*), which signed the app's
   * pushes before it had keys of its own; subscriptions made then (device key NULL, or this key) keep it.
   */
  processVapid?: VapidCredentials;
  /**
   * Push-service origins trusted with a CA bundle of their own (the sandbox's self-signed
   * certificate); every other host is verified against Node's built-in roots.
   */
  trusted?: ReadonlyArray<{ host: string; port: number; ca: string }>;
  /**
   * Addresses and CIDR ranges that are not public but push services may resolve to (a push service
   * of the operator's own on a private network: WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES). Every other
   * connection goes to public addresses only, trusted origins aside (web-address.ts).
   */
  privateAddresses?: readonly string[];
  /** Reach push services through this HTTP CONNECT egress proxy. */
  proxy?: ProxySettings;
  requestTimeoutMs: number;
  /**
   * Record on the push's device the VAPID public key its subscription was found to take (a pair
   * other than the one the device records, accepted after a VapidKeyMismatch), so every web-pusher
   * signs its pushes with it first from then on, after a restart too. Called on that path only; a
   * failure is logged, and the push is delivered all the same.
   */
  recordKey?: (push: DevicePush, publicKey: string) => Promise<unknown>;
  /** Most keep-alive connections kept open per push-service origin. */
  maxSockets?: number;
}
