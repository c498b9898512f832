import { bool, int, type VarSpec } from '@herald/config';
import { addressRange, UNREACHABLE_SUBJECT, vapidSubjectProblem } from '@herald/contracts';
import { deschedulerConfig, proxyUrlVar, pusherConfig } from '@herald/delivery';

/** An optional base64url key of `bytes` bytes (unset or empty: undefined). */
const vapidKeyVar = (description: string, bytes: number, secret = false): VarSpec<string | undefined> => ({
  description,
  default: '',
  secret,
  parse: (raw) => {
    const value = raw.trim();
    if (value.length === 0) return undefined;
    if (!/^[A-Za-z0-9_-]+$/.test(value) || Buffer.from(value, 'base64url').length !== bytes) {
      throw new Error(`must be ${bytes} bytes, base64url without padding (as web-push generate-vapid-keys prints them)`);
    }
    return value;
  },
});

/**
 * A subject that is no mailto: or https: URL is refused. One on a host no push service can reach
 * (localhost, an IP, a local name) is taken, and the web-pusher logs an error at start
 * (subjectWarning): refused, an upgrade stopped every web push of a deployment whose subject
 * Chrome's and Firefox's services had accepted all along, apps with keys of their own too.
 */
const subjectVar: VarSpec<string | undefined> = {
  description: 'VAPID contact (RFC 8292 §2.1): a mailto: or https: URL on a public domain where push services can reach the operator (not localhost, an IP or a single-label host: Apple refuses those, and the web-pusher logs an error at start)',
  default: '',
  parse: (raw) => {
    const value = raw.trim();
    if (value.length === 0) return undefined;
    const problem = vapidSubjectProblem(value);
    if (problem !== undefined && !problem.startsWith(UNREACHABLE_SUBJECT)) throw new Error(problem);
    return value;
  },
};

/**
 * Addresses and CIDR ranges that are not public which push services may resolve to: a push service
 * of the operator's own on a private network. Every other endpoint that is, or resolves only to,
 * such an address is refused (SSRF: an allowed host name pointed at 127.0.0.1 or a metadata service).
 */
const privateAddressesVar: VarSpec<readonly string[]> = {
  description:
    'Comma-separated addresses or CIDR ranges that are not public (10.20.0.0/16, fd00::/8) which push services may resolve to: a push service of your own on a private network. Empty: push services are reached at public addresses only (the sandbox\'s trusted origin aside); through WEB_PUSH_PROXY_URL the proxy resolves names and must refuse private ones itself',
  default: '',
  parse: (raw) => {
    const entries = raw.split(',').map((e) => e.trim()).filter((e) => e.length > 0);
    for (const entry of entries) addressRange(entry);
    return entries;
  },
};

/** Why WEB_PUSH_VAPID_SUBJECT will be refused by Apple's push service (logged at start), if it will. */
export const subjectWarning = (subject: string | undefined): string | undefined =>
  subject === undefined ? undefined : vapidSubjectProblem(subject);

export const webPusherConfig = {
  ...pusherConfig,
  // The in-process descheduler (scheduled web pushes are released here; there is no web-descheduler).
  DESCHEDULER_BATCH_SIZE: deschedulerConfig.DESCHEDULER_BATCH_SIZE,
  DESCHEDULER_CONCURRENCY: deschedulerConfig.DESCHEDULER_CONCURRENCY,
  DESCHEDULER_RECHECK_MS: deschedulerConfig.DESCHEDULER_RECHECK_MS,
  DESCHEDULER_ERROR_BACKOFF_MS: deschedulerConfig.DESCHEDULER_ERROR_BACKOFF_MS,
  DESCHEDULER_HELD_BATCH_TIMEOUT_MS: deschedulerConfig.DESCHEDULER_HELD_BATCH_TIMEOUT_MS,
  WEB_PUSH_VAPID_PUBLIC_KEY: vapidKeyVar('VAPID public key for apps without their own (65 bytes, base64url); with the private key and subject', 65),
  WEB_PUSH_VAPID_PRIVATE_KEY: vapidKeyVar('VAPID private key for apps without their own (32 bytes, base64url)', 32, true),
  WEB_PUSH_VAPID_SUBJECT: subjectVar,
  WEB_PUSH_PROXY_URL: proxyUrlVar('HTTP CONNECT egress proxy for push services: http://[user:password@]host:port'),
  WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES: privateAddressesVar,
  WEB_PUSH_TRUST_SANDBOX: bool("Trust the local sandbox's certificate for the sandbox's Web Push origin only (sandbox.json); false in production", { default: 'true' }),
  WEB_PUSH_REQUEST_TIMEOUT_MS: int('Per-request timeout for push services', { default: '5000', min: 100 }),
} as const;
