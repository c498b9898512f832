import { WEB_PUSH_MAX_BODY_BYTES, WEB_PUSH_TOPIC, WebPushUrgencies } from '@herald/contracts';
import type { Headers } from './apns-request.ts';
import { sleep, type Answer, type SandboxContext } from './exchange.ts';
import { WEB_FAULT_STATUS, type WebFaultError } from './faults.ts';
import { decryptWebPush } from './web-ece.ts';
import type { WebPushStore, WebSubscription } from './web-store.ts';
import { asService, checkVapid, type WebPushService } from './web-vapid.ts';

export interface WebRequest {
  method: string | undefined;
  path: string;
  headers: Headers;
  body: Buffer;
  /** The push resource's origin as the client addressed it (`https://` + Host): the JWT's `aud`. */
  origin: string;
}

export interface WebHandled {
  answer: Answer;
  endpoint: string | undefined;
  /** The decrypted payload of an accepted push ('' otherwise). */
  plaintext: string;
  warnings: string[];
}

const header = (h: Headers, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v.join(', ') : v;
};

const problem = (status: number, reason: string, extra: Record<string, string> = {}): Answer => ({
  status,
  headers: { 'content-type': 'application/json', ...extra },
  body: JSON.stringify({ code: status, error: reason }),
});

/** RFC 8030 §5.2–5.4 headers: TTL required, Urgency and Topic valid when present. */
function headerProblem(h: Headers): string | undefined {
  const ttl = header(h, 'ttl');
  if (ttl === undefined) return 'TTL header is required (RFC 8030 §5.2)';
  if (!/^\d+$/.test(ttl.trim())) return `TTL must be a non-negative integer of seconds, got "${ttl}"`;
  const urgency = header(h, 'urgency');
  if (urgency !== undefined && !(WebPushUrgencies as readonly string[]).includes(urgency)) return `Urgency must be one of ${WebPushUrgencies.join(', ')} (RFC 8030 §5.3)`;
  const topic = header(h, 'topic');
  if (topic !== undefined && !WEB_PUSH_TOPIC.test(topic)) return 'Topic must be at most 32 characters of the URL-safe base64 alphabet (RFC 8030 §5.4)';
  const encoding = header(h, 'content-encoding');
  if (encoding !== 'aes128gcm') return `Content-Encoding must be aes128gcm (RFC 8291 §4), got ${encoding ?? 'none'}`;
  return undefined;
}

/**
 * Beyond RFC 8030, Apple's push service decodes a Topic as base64url and answers 400
 * `{"reason":"BadWebPushTopic"}` to one of a length no bytes encode to (1, 5, 9 … 29), as its users
 * observe; the sandbox's reason for that answer, or undefined. Google's and Mozilla's take any length.
 */
export function appleTopicRefusal(service: WebPushService, topic: string | undefined): string | undefined {
  // Only what was observed: lengths of 1 mod 4 (Herald itself sends multiples of 4 only).
  if (service !== 'apple' || topic === undefined || topic.length % 4 !== 1) return undefined;
  return `Topic "${topic}" is ${topic.length} characters, which no base64url encoding is: Apple's push service refuses it (BadWebPushTopic, as its users observe)`;
}

async function injected(ctx: SandboxContext, endpoint: string): Promise<Answer | undefined> {
  const fault = ctx.faults.take('web', endpoint);
  if (fault === undefined) return undefined;
  if (fault.delayMs !== undefined) await sleep(fault.delayMs);
  if (fault.error === undefined) return undefined;
  const status = WEB_FAULT_STATUS[fault.error as WebFaultError];
  const retryAfter: Record<string, string> = fault.retryAfterSeconds !== undefined ? { 'retry-after': String(fault.retryAfterSeconds) } : {};
  return problem(status, `injected fault ${fault.error}`, retryAfter);
}

function accept(req: WebRequest, sub: WebSubscription, store: WebPushStore, claims: Parameters<WebPushStore['record']>[0]['claims'], vapidKey: string): WebHandled {
  const decrypted = decryptWebPush(req.body, { ecdh: sub.ecdh, auth: sub.auth });
  if (!decrypted.ok) return { answer: problem(400, decrypted.reason), endpoint: sub.endpoint, plaintext: '', warnings: [decrypted.reason] };
  const text = decrypted.plaintext.toString('utf8');
  let payload: unknown = text;
  try {
    payload = JSON.parse(text) as unknown;
  } catch {
    // Not JSON: kept as text.
  }
  const topic = header(req.headers, 'topic');
  const received = store.record({
    endpoint: sub.endpoint,
    subscriptionId: sub.id,
    receivedAt: new Date().toISOString(),
    payload,
    plaintextBytes: decrypted.plaintext.length,
    bodyBytes: req.body.length,
    ttl: Number(header(req.headers, 'ttl')),
    urgency: header(req.headers, 'urgency') ?? 'normal',
    ...(topic !== undefined && { topic }),
    claims,
    vapidKey,
  });
  const location = `${req.origin}/m/${sub.id}.${received.seq}`;
  return { answer: { status: 201, headers: { location }, body: '' }, endpoint: sub.endpoint, plaintext: text, warnings: [] };
}

/** One request to the Web Push service: `POST /wp/<subscription id>`. */
export async function handleWebRequest(req: WebRequest, store: WebPushStore, ctx: SandboxContext): Promise<WebHandled> {
  const none = (answer: Answer, endpoint?: string): WebHandled => ({ answer, endpoint, plaintext: '', warnings: answer.status >= 400 ? [answer.body] : [] });
  const m = /^\/wp\/([A-Za-z0-9_-]+)$/.exec(req.path);
  if (req.method !== 'POST' || m === null) return none(problem(404, `no push resource at ${req.method ?? ''} ${req.path}`));
  const sub = store.get(m[1] ?? '');
  if (sub === undefined) return none(problem(404, 'no such subscription'));
  const fault = await injected(ctx, sub.endpoint);
  if (fault !== undefined) return none(fault, sub.endpoint);
  if (sub.gone) return none(problem(410, 'push subscription has unsubscribed or expired'), sub.endpoint);
  // A body over the limit is refused before anything else is read (RFC 8030 §7.2: at least 4,096 bytes accepted).
  if (req.body.length > WEB_PUSH_MAX_BODY_BYTES) return none(problem(413, `body is ${req.body.length} bytes; at most ${WEB_PUSH_MAX_BODY_BYTES}`), sub.endpoint);
  const vapid = asService(checkVapid(header(req.headers, 'authorization'), req.origin, sub.applicationServerKey), sub.service);
  // The push service's own words on the wire; the sandbox's reason in its warnings.
  const ownWords = (status: number, body: string, reason: string): WebHandled => ({
    answer: { status, headers: { 'content-type': 'application/json' }, body },
    endpoint: sub.endpoint,
    plaintext: '',
    warnings: [reason],
  });
  if (!vapid.ok && vapid.answer !== undefined) return ownWords(vapid.status, vapid.answer, vapid.reason);
  if (!vapid.ok) return none(problem(vapid.status, vapid.reason), sub.endpoint);
  const bad = headerProblem(req.headers);
  if (bad !== undefined) return none(problem(400, bad), sub.endpoint);
  const refusedTopic = appleTopicRefusal(sub.service, header(req.headers, 'topic'));
  if (refusedTopic !== undefined) return ownWords(400, JSON.stringify({ reason: 'BadWebPushTopic' }), refusedTopic);
  return accept(req, sub, store, vapid.claims, vapid.publicKey);
}
