import https from 'node:https';
import type { DevicePush } from '@herald/contracts';
import { logSummary, type Logger } from '@herald/logging';
import { retryAfterMs } from './retry-after.ts';
import { isRefusal, type Prepared, type PushProvider, type Refusal, type SendResult } from './push-provider.ts';
import { EndpointAddressRefused } from './web-address.ts';
import { WebPushAgent } from './web-agent.ts';
import type { Json } from './merge-json.ts';
import { classifyWebPushAnswer, type WebPushAnswer } from './web-classify.ts';
import { buildWebPayload, webRequestFromNow, webRequestOf } from './web-payload.ts';
import { webRequestProblem, type WebPushRequest } from './web-rules.ts';
import type { VapidKeyPair, WebPushSettings } from './web-settings.ts';
import { asProcessRefusal, keyName, otherSigningKeys, signingKeyFor, type SigningKey } from './web-signing-key.ts';

type WebPushLib = typeof import('web-push');

/** RFC 8292 §2: a JWT lives at most 24 h; Herald signs for 12 h and re-signs an hour before it ends. */
const JWT_LIFETIME_S = 12 * 3600;
const JWT_RENEW_BEFORE_S = 3600;
const MAX_CACHED_JWTS = 1000;
const MAX_ANSWER_BYTES = 4096;

/** Signed `Authorization: vapid t=…, k=…` headers, reused per push-service origin, subject and key until an hour before they expire. */
function vapidSigner(lib: WebPushLib, now: () => number) {
  const cache = new Map<string, { header: string; renewAt: number }>();
  return (audience: string, subject: string, pair: VapidKeyPair): string => {
    const key = `${audience} ${subject} ${pair.publicKey}`;
    const hit = cache.get(key);
    const at = now();
    if (hit !== undefined && hit.renewAt > at) return hit.header;
    const exp = Math.floor(at / 1000) + JWT_LIFETIME_S;
    const header = lib.getVapidHeaders(audience, subject, pair.publicKey, pair.privateKey, 'aes128gcm', exp).Authorization;
    if (cache.size >= MAX_CACHED_JWTS) cache.clear();
    cache.set(key, { header, renewAt: (exp - JWT_RENEW_BEFORE_S) * 1000 });
    return header;
  };
}

/** POST the encrypted message; the answer (status, Location, Retry-After, a little of the body) or a transport error. */
function post(endpoint: string, headers: Record<string, string | number>, body: Buffer, agent: https.Agent, timeoutMs: number): Promise<WebPushAnswer> {
  return new Promise((resolve, reject) => {
    const req = https.request(endpoint, { method: 'POST', headers, agent, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < MAX_ANSWER_BYTES) chunks.push(chunk);
        size += chunk.length;
      });
      res.on('error', reject);
      res.on('end', () => {
        const retryAfter = retryAfterMs(res.headers['retry-after']);
        resolve({
          status: res.statusCode ?? 0,
          ...(res.headers.location !== undefined && { location: res.headers.location }),
          ...(retryAfter !== undefined && { retryAfterMs: retryAfter }),
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A push service saying the request was signed with another key than the subscription's (web-classify.ts). */
const isKeyMismatch = (result: SendResult): boolean => result.kind === 'permanent' && result.reason.startsWith('VapidKeyMismatch:');

/** Subscriptions that took another pair than their device records, or none held, remembered per process (bounded). */
const MAX_LEARNED_KEYS = 10_000;
/** A subscription no pair held was accepted for: not tried with the others again in this process. */
const NO_PAIR = '';

/**
 * Why web-push could not make a push's request (generateRequestDetails threw), as a SendResult;
 * nothing was sent, so no answer of the push service's (notSent). The app's VAPID keys or subject
 * (its ban counts it); the subscription's keys, which no send can ever use: the subscription is
 * dead (stored before the doors checked the point; unlessAppFails: while the app's pushes are
 * delivered, so a fault of Herald's own cannot condemn every subscription). Anything else (a JWT
 * expiry web-push refuses, as a clock far ahead makes it: "`expiration` value is greater than
 * maximum of 24 hours") is parked, replayable: taken for the subscription's keys, it condemned
 * every subscription the process sent to.
 */
export function requestNotMade(err: unknown): Extract<SendResult, { kind: 'permanent' | 'dead-token' }> {
  const message = err instanceof Error ? err.message : String(err);
  if (/vapid|subject|audience/i.test(message)) return { kind: 'permanent', reason: `credentials: VAPID ${message}`, notSent: true };
  const keyProblem = (err as NodeJS.ErrnoException).code === 'ERR_CRYPTO_ECDH_INVALID_PUBLIC_KEY' || /p256dh|\bauth\b|user public key/i.test(message);
  if (keyProblem) return { kind: 'dead-token', reason: `subscription keys unusable: ${message}`, unlessAppFails: true, notSent: true };
  return { kind: 'permanent', reason: `web push request not made: ${message}`, notSent: true };
}

/** A web push with its subscription's keys. */
type Addressed = DevicePush & { webKeys: NonNullable<DevicePush['webKeys']> };

/**
 * What prepare made of a web push that passed its checks: its request and the payload serialised in
 * it (stamped again after a wait for budget), the pair it is signed with first, its subscription's keys.
 */
type WebPrepared = { request: WebPushRequest; payload: Json; key: SigningKey; webKeys: Addressed['webKeys'] };

/**
 * Web Push (RFC 8030) with `web-push` doing the RFC 8291 aes128gcm encryption and the RFC 8292
 * VAPID signature (generateRequestDetails), sent over Herald's own keep-alive agent so
 * connections to a push service are reused. One provider per app (its own VAPID keys).
 *
 * A push refused as signed with another key than the subscription's (VapidKeyMismatch) is sent again
 * signed with each other pair the provider holds (otherSigningKeys): the key a device records may
 * be a guess made at registration. The first that is accepted delivers it, and is tried first for
 * that subscription from then on: in this process, and, recorded on its device (`recordKey`), in
 * every other; a 404/410 or a transient answer to one is the push's answer; when every pair is
 * refused, the first refusal is, naming the others tried.
 */
export async function createWebPushProvider(settings: WebPushSettings, logger: Logger, now: () => number = Date.now): Promise<PushProvider> {
  const lib = (await import('web-push')).default;
  const agent = new WebPushAgent(settings);
  const sign = vapidSigner(lib, now);
  const log = logger.child({ provider: 'web' });
  const learned = new Map<string, string>();

  async function attempt(push: Addressed, request: WebPushRequest, key: SigningKey): Promise<SendResult> {
    let details: ReturnType<WebPushLib['generateRequestDetails']>;
    try {
      const authorization = sign(new URL(push.token).origin, key.subject, key.pair);
      details = lib.generateRequestDetails({ endpoint: push.token, keys: push.webKeys }, request.plaintext, {
        TTL: request.ttl,
        urgency: request.urgency,
        ...(request.topic !== undefined && { topic: request.topic }),
        contentEncoding: 'aes128gcm',
        headers: { Authorization: authorization },
      });
    } catch (err) {
      return requestNotMade(err);
    }
    try {
      const answer = await post(details.endpoint, details.headers as Record<string, string | number>, details.body ?? Buffer.alloc(0), agent, settings.requestTimeoutMs);
      return asProcessRefusal(classifyWebPushAnswer(answer), key);
    } catch (err) {
      const e = err as Error;
      // Nothing was sent: the endpoint points into the deployment's own network. Parked naming the
      // address, not retried (it resolves the same way the next time), not counted towards the
      // app's ban (the app's credentials are not in question) and no dead subscription: a name's
      // answer depends on when and where it is resolved (split DNS), so the subscription is kept
      // for a replay once the operator has allowed the range or fixed the resolver. Nor is it the
      // push service's answer (notSent): a trial of its lane while down goes on to the next push.
      if (e instanceof EndpointAddressRefused) return { kind: 'permanent', reason: e.message, notSent: true };
      if (e.name === 'TimeoutError' || e.name === 'AbortError') return { kind: 'transient', reason: `timeout: no answer from the push service within ${settings.requestTimeoutMs} ms`, outage: true };
      // Once per app and error every few seconds, then how many more: an unreachable provider fails every push.
      logSummary(log, 'warn', 'web push send failed').note(`${push.app}\u0000${(err as Error).message}`, { err, app: push.app, pushId: push.pushId });
      return { kind: 'transient', reason: `transport: ${e.message}`, outage: true };
    }
  }

  const remember = (subscription: string, publicKey: string): void => {
    if (learned.size >= MAX_LEARNED_KEYS) learned.clear();
    learned.set(subscription, publicKey);
  };

  /**
   * Remember (or forget) which pair a subscription took when it is not the one its device records,
   * and record it on the device (settings.recordKey) for the web-pushers that do not remember it.
   */
  async function took(push: Addressed, subscription: string, key: SigningKey, recorded: SigningKey): Promise<void> {
    if (key === recorded) {
      learned.delete(subscription);
      return;
    }
    remember(subscription, key.pair.publicKey);
    logSummary(log, 'info', 'web push accepted signed with another key than its device records').note(push.app, { app: push.app, pushId: push.pushId, key: keyName(key) });
    await settings.recordKey?.(push, key.pair.publicKey).catch((err: unknown) => {
      // Remembered here all the same: another web-pusher, or this one restarted, pays one refused request.
      logSummary(log, 'warn', 'web push: could not record the key a subscription took on its device').note(push.app, { err, app: push.app, pushId: push.pushId });
    });
  }

  /**
   * Signed with the device's key (or the pair this subscription took last time) first; after a key
   * mismatch, with each other pair held, once: a subscription none of them was accepted for is
   * remembered too (NO_PAIR), so its later pushes cost one request each, as the limiter counts them,
   * not one for every pair held.
   */
  async function signedByItsKey(push: Addressed, request: WebPushRequest, recorded: SigningKey): Promise<SendResult> {
    const subscription = `${push.token} ${push.webKeys.p256dh} ${recorded.pair.publicKey}`;
    if (learned.get(subscription) === NO_PAIR) return attempt(push, request, recorded);
    const keys = [recorded, ...otherSigningKeys(settings, recorded)];
    const last = keys.findIndex((key) => key.pair.publicKey === learned.get(subscription));
    if (last > 0) keys.unshift(...keys.splice(last, 1));
    const [first, ...others] = keys as [SigningKey, ...SigningKey[]];
    const answer = await attempt(push, request, first);
    if (!isKeyMismatch(answer)) return answer;
    for (const key of others) {
      const result = await attempt(push, request, key);
      // Refused too (another mismatch, a JWT it will not take from this pair): says nothing of the push.
      if (result.kind === 'permanent') continue;
      if (result.kind === 'delivered') await took(push, subscription, key, recorded);
      return result;
    }
    if (others.length === 0 || answer.kind !== 'permanent') return answer;
    remember(subscription, NO_PAIR);
    return { ...answer, reason: `${answer.reason}; refused signed with ${others.map(keyName).join(', ')} too` };
  }

  /**
   * The last line of defence: a message the push service would refuse for good is never sent.
   * Refused here, before any request (notSent), it says nothing of the push service.
   */
  const prepare = (push: DevicePush): WebPrepared | Refusal => {
    const at = new Date(now());
    const payload = buildWebPayload(push, at);
    const request = webRequestOf(push, payload, at);
    const problem = webRequestProblem(request);
    if (problem !== undefined) return { kind: 'permanent', reason: problem, notSent: true };
    const { webKeys } = push;
    if (webKeys === undefined) return { kind: 'permanent', reason: 'a web push without its subscription keys (p256dh, auth)', notSent: true };
    const key = signingKeyFor(push, settings);
    // Parked, not a dead token: this process may not hold the pair yet (an app row cached from
    // before a rotation a second ago, a replica with another WEB_PUSH_VAPID_* pair), and a
    // subscription condemned on that evidence would be lost; a parked push can be replayed.
    if ('problem' in key) return { kind: 'permanent', reason: key.problem, notSent: true };
    return { request, payload, key, webKeys };
  };

  return {
    platform: 'web',
    prepare: (push) => prepare(push) as unknown as Prepared | Refusal,
    async send(push: DevicePush, _target, prepared?: Prepared, stale?: boolean): Promise<SendResult> {
      const checked = (prepared as unknown as WebPrepared | undefined) ?? prepare(push);
      if (isRefusal(checked)) return checked;
      // Made before a wait for budget: its TTL (left until expiresAt) and sentAt count from now; checked, neither grew.
      if (stale === true) webRequestFromNow(checked.request, checked.payload, push, new Date(now()));
      return signedByItsKey({ ...push, webKeys: checked.webKeys }, checked.request, checked.key);
    },
    close: () => {
      agent.destroy();
      return Promise.resolve();
    },
  };
}
