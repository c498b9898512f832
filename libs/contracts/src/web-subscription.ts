import { z } from 'zod';
import { DEFAULT_WEB_PUSH_HOSTS, hostAllowed, p256PointProblem, WebPushKeys } from './web-push.ts';

/**
 * A browser subscription at Herald's doors (docs/adr/0014-web-push.md). On the queue a web
 * registration is canonical: `token` = the subscription's endpoint, `keys` = its keys. The HTTP
 * API and the CLI also take the subscription as the browser gives it (`PushSubscription.toJSON()`).
 */

/** A base64url key in one spelling: without the padding ("=") some encoders leave, as Herald's own keys are spelled. */
export const unpaddedKey = (key: string): string => key.replace(/=+$/, '');

/**
 * A VAPID public key (RFC 8292 §3.2, the browser's applicationServerKey): an uncompressed P-256
 * point, base64url, taken without its padding: it is compared with the app's keys to pick the pair
 * to sign with, and a front end's btoa-style encoder leaves "=" that the keys never have.
 */
export const VapidPublicKey = z
  .string()
  .superRefine((value, ctx) => {
    if (!/^[A-Za-z0-9_-]+={0,2}$/.test(value)) {
      ctx.addIssue({ code: 'custom', message: 'must be base64url (RFC 4648 §5: letters, digits, "-" and "_")' });
      return;
    }
    const raw = Buffer.from(unpaddedKey(value), 'base64url');
    if (raw.length !== 65 || raw[0] !== 0x04) {
      ctx.addIssue({ code: 'custom', message: `must be an uncompressed P-256 public key (65 bytes starting 0x04), got ${raw.length} bytes` });
      return;
    }
    const problem = p256PointProblem(raw);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform(unpaddedKey);

/** `PushSubscription.toJSON()`: endpoint, expirationTime (ignored: the push service answers 404/410 when it ends) and keys. */
export const PushSubscriptionJson = z.object({
  endpoint: z.string().min(1).max(4096),
  expirationTime: z.number().nullable().optional(),
  keys: WebPushKeys,
});
export type PushSubscriptionJson = z.infer<typeof PushSubscriptionJson>;

/** The registration fields of a browser subscription: its endpoint is the device token. */
export const subscriptionFields = (s: PushSubscriptionJson): { token: string; keys: WebPushKeys } => ({ token: s.endpoint, keys: s.keys });

/** The push-service hosts an app accepts: its own list, or the well-known browser push services. */
export const webPushHostsOf = (hosts: readonly string[] | null | undefined): readonly string[] => hosts ?? DEFAULT_WEB_PUSH_HOSTS;

/** Why an endpoint's push service is not one the app accepts (undefined: it is, or the endpoint is no URL: the contract says so). */
export function endpointHostProblem(endpoint: string, hosts: readonly string[] | null | undefined): string | undefined {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return undefined;
  }
  const host = url.hostname;
  const allowed = webPushHostsOf(hosts);
  if (!hostAllowed(host, allowed)) return `the push service host "${host}" is not on the app's allow-list (${allowed.join(', ')}); an operator adds it with herald apps web-hosts`;
  // The browsers' push services take endpoints on https's own port only. Another port of theirs
  // (fcm.googleapis.com:81) answers nothing: each push to it waited out its timeout, six attempts,
  // and held the web-pusher's batches (every app's pushes) meanwhile. A host an operator listed
  // (a push service of its own, a test one) keeps whatever port it names.
  if (url.port !== '' && hostAllowed(host, DEFAULT_WEB_PUSH_HOSTS)) return `the push service host "${host}" takes endpoints on port 443 only, got port ${url.port}`;
  return undefined;
}

/**
 * The push service an endpoint belongs to, as the app's allow-list names it: a wildcard entry's
 * hosts are one service (WNS spreads Edge's endpoints over many regional hosts of
 * *.notify.windows.com), any other the endpoint's host name (its port aside). So pauses and pacing
 * per push service are as many as the list's entries, whatever hosts and ports endpoints name.
 * Undefined: no URL.
 */
export function pushServiceOf(endpoint: string, hosts: readonly string[] | null | undefined): string | undefined {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return undefined;
  }
  const entries = webPushHostsOf(hosts);
  if (hostAllowed(url.hostname, entries.filter((entry) => !entry.startsWith('*.')))) return url.hostname;
  const wildcard = entries.find((entry) => entry.startsWith('*.') && hostAllowed(url.hostname, [entry]));
  return wildcard?.toLowerCase() ?? url.hostname;
}

/** A host-list entry: a host name, or "*." and a domain for its subdomains (no scheme, port or path). */
export const WebPushHost = z
  .string()
  .min(1)
  .max(253)
  .regex(/^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/, 'must be a host name, or "*." and a domain for its subdomains (no scheme, port or path)');
