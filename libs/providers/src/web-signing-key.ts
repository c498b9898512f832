import { unpaddedKey, type DevicePush } from '@herald/contracts';
import type { SendResult } from './push-provider.ts';
import type { VapidKeyPair, WebPushSettings } from './web-settings.ts';

/** The pair a push is signed with, and the contact subject that goes with it. */
export interface SigningKey {
  subject: string;
  pair: VapidKeyPair;
  /** The web-pusher's own pair (WEB_PUSH_VAPID_*), not the app's: a refusal of it is the deployment's, not the app's. */
  byProcess: boolean;
}

const short = (key: string): string => `${key.slice(0, 12)}…`;

/**
 * The key pair a subscription was made with (ADR 0014, rotation). `push.webVapidKey` is the
 * applicationServerKey the browser subscribed with: as registered, or the app's current key at
 * registration; none (NULL) when the app had no keys of its own then, so the web-pusher's process
 * pair (WEB_PUSH_VAPID_*) served it. The web-pusher's own provider (for apps without keys of their
 * own) has only `settings.processVapid`; an app's own provider signs with the app's current or
 * previous pair (`settings.vapid`), and with `settings.processVapid` a subscription made under the
 * process pair: giving an app keys of its own must not orphan the subscriptions it already had.
 */
export function signingKeyFor(push: DevicePush, settings: Pick<WebPushSettings, 'vapid' | 'processVapid'>): SigningKey | { problem: string } {
  const { vapid, processVapid } = settings;
  // Compared without padding: a registration stored before its contract dropped it may hold "=".
  const wanted = push.webVapidKey === undefined ? undefined : unpaddedKey(push.webVapidKey);
  const processKey = processVapid && { subject: processVapid.subject, pair: processVapid.current, byProcess: true };
  const isProcessKey = processVapid !== undefined && wanted === unpaddedKey(processVapid.current.publicKey);
  if (vapid === undefined) {
    if (processKey === undefined) {
      return { problem: `no-vapid-keys: app "${push.app}" has no VAPID keys and the web-pusher has none (WEB_PUSH_VAPID_PUBLIC_KEY, WEB_PUSH_VAPID_PRIVATE_KEY, WEB_PUSH_VAPID_SUBJECT)` };
    }
    if (wanted === undefined || isProcessKey) return processKey;
    return {
      problem: `vapid-key-unknown: the subscription was made with application server key ${short(wanted)}, not the web-pusher's WEB_PUSH_VAPID_PUBLIC_KEY (${short(processKey.pair.publicKey)}) that signs app "${push.app}"'s pushes (it has no keys of its own); the browser must subscribe with that key`,
    };
  }
  const own = (pair: VapidKeyPair): SigningKey => ({ subject: vapid.subject, pair, byProcess: false });
  if (wanted === undefined) return processKey ?? own(vapid.current);
  if (wanted === unpaddedKey(vapid.current.publicKey)) return own(vapid.current);
  if (vapid.previous !== undefined && wanted === unpaddedKey(vapid.previous.publicKey)) return own(vapid.previous);
  if (processKey !== undefined && isProcessKey) return processKey;
  const process = processVapid === undefined ? '' : ` nor the web-pusher's WEB_PUSH_VAPID_PUBLIC_KEY (${short(processVapid.current.publicKey)})`;
  // Without a previous pair there was no rotation: the key was never one Herald signs this app's pushes with
  // (the doors refuse such a key for an app with keys of its own; stored before they did, or for an app without).
  if (vapid.previous === undefined) {
    return {
      problem: `vapid-key-unknown: the subscription was made with application server key ${short(wanted)}, not the key Herald signs app "${push.app}"'s pushes with (${short(vapid.current.publicKey)})${process}; the browser must subscribe with that key`,
    };
  }
  return {
    problem: `vapid-key-rotated: the subscription was made with application server key ${short(wanted)}, neither app "${push.app}"'s current nor its previous key (rotated away twice since, or never its key)${process}; the browser must subscribe again`,
  };
}

/**
 * The other pairs this provider holds, in the order they are tried after a push service said the
 * subscription was not made with `tried` (VapidKeyMismatch): the app's current, its previous, the
 * web-pusher's. The device's key may be a guess (a register without applicationServerKey records
 * the app's current key when the registrar applies it, which a backlog across a rotation, or across
 * the app's first keys, makes the wrong one); a push service accepts a request only when signed with
 * the subscription's own key, so trying the pairs Herald holds cannot reach anyone else's browser.
 */
export function otherSigningKeys(settings: Pick<WebPushSettings, 'vapid' | 'processVapid'>, tried: SigningKey): SigningKey[] {
  const { vapid, processVapid } = settings;
  const held: SigningKey[] = [];
  if (vapid !== undefined) {
    held.push({ subject: vapid.subject, pair: vapid.current, byProcess: false });
    if (vapid.previous !== undefined) held.push({ subject: vapid.subject, pair: vapid.previous, byProcess: false });
  }
  if (processVapid !== undefined) held.push({ subject: processVapid.subject, pair: processVapid.current, byProcess: true });
  const seen = new Set([unpaddedKey(tried.pair.publicKey)]);
  return held.filter((key) => {
    const publicKey = unpaddedKey(key.pair.publicKey);
    if (seen.has(publicKey)) return false;
    seen.add(publicKey);
    return true;
  });
}

/** A key as a parked reason names it: whose, and its first characters. */
export const keyName = (key: SigningKey): string => `${key.byProcess ? "the web-pusher's WEB_PUSH_VAPID_PUBLIC_KEY" : 'key'} ${short(key.pair.publicKey)}`;

/**
 * A push service's refusal of a JWT signed with the web-pusher's own pair is the deployment's
 * (WEB_PUSH_VAPID_SUBJECT or its keys), not the app's: it must not count towards banning the app,
 * whose own keys, if any, are not in question. Parked under its own code, naming what to fix.
 */
export function asProcessRefusal(result: SendResult, key: SigningKey): SendResult {
  if (!key.byProcess || result.kind !== 'permanent' || !result.reason.startsWith('VapidUnauthorized:')) return result;
  return {
    kind: 'permanent',
    reason: `process-vapid-refused: the push service refused the JWT signed with the web-pusher's own WEB_PUSH_VAPID_* pair and subject "${key.subject}" (a public mailto: or https: contact is needed); fix the web-pusher's settings and replay (${result.reason})`,
  };
}
