import type http2 from 'node:http2';
import { apnsCertificateDateProblem, apnsCertificateValidity, type DevicePush } from '@herald/contracts';
import { logSummary, type Logger } from '@herald/logging';
import type { Provider, ProviderOptions, ResponseFailure } from '@parse/node-apn';
import { apnsRequestParts, type ApnsRequestParts } from './apns-notification.ts';
import { apnsRequestProblem } from './apns-rules.ts';
import { classifyApnsFailure } from './apns-classify.ts';
import { retryAfterSecondsOf } from './retry-after.ts';
import { isRefusal, type Prepared, type PushProvider, type Refusal, type SendResult, type SendTarget } from './push-provider.ts';
import { apnsTunnelOptions } from './apns-tunnel.ts';
import { useEndOfLifeAsyncBind } from './async-bind.ts';
import { settledWithin } from './warm-up.ts';
import type { ApnsSettings } from './settings.ts';

type ApnModule = typeof import('@parse/node-apn');

/**
 * node-apn's failure object; `status` and `response` are absent for transport errors.
 * `retryAfter` is APNs' Retry-After header (delay-seconds or an HTTP-date). node-apn 8.1.0 reads
 * it under the wrong name and deletes it inside its client before the failure reaches
 * `Provider.send`'s `failed[]`, so no wrapper out here could ever see it: the patch in
 * patches/@parse+node-apn+8.1.0.patch (applied by `postinstall`) makes the client keep it.
 */
interface NodeApnFailure {
  status?: number | string;
  response?: { reason?: string; timestamp?: number };
  error?: { message?: string };
  retryAfter?: unknown;
}

function providerOptions(s: ApnsSettings): ProviderOptions {
  const auth: ProviderOptions =
    s.auth.kind === 'token'
      ? { token: { key: s.auth.key, keyId: s.auth.keyId, teamId: s.auth.teamId } }
      : { cert: s.auth.cert, key: s.auth.key, ...(s.auth.passphrase !== undefined ? { passphrase: s.auth.passphrase } : {}) };
  return {
    ...auth,
    address: s.address,
    port: s.port,
    production: s.production,
    ...(s.ca !== undefined ? { ca: [s.ca] } : {}),
    // Through settings.proxy (CONNECT, then TLS with the CA): http2.connect takes createConnection from node-apn's options.
    ...apnsTunnelOptions(s),
    requestTimeout: s.requestTimeoutMs,
    // Herald retries through its own queues (with back-off and the shared limiter), not inside the client.
    connectionRetryLimit: 0,
  };
}

function toFailureResult(failure: NodeApnFailure, nowMs = Date.now()): SendResult {
  const status = typeof failure.status === 'number' ? failure.status : undefined;
  const reason = failure.response?.reason ?? (status !== undefined ? failure.error?.message : undefined);
  const retryAfterSeconds = retryAfterSecondsOf(failure.retryAfter, nowMs);
  return classifyApnsFailure({
    ...(status !== undefined ? { status } : {}),
    ...(reason !== undefined ? { reason } : {}),
    ...(failure.response?.timestamp !== undefined ? { timestamp: failure.response.timestamp } : {}),
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
    transportError: failure.error?.message ?? String(failure.status ?? 'unknown'),
  });
}

/** A request Herald checked: its parts, and its payload's JSON text, counted against Apple's limit and sent as counted. */
interface ApnsRequest {
  parts: ApnsRequestParts;
  body: string;
}

function buildNote(apn: ApnModule, { parts, body }: ApnsRequest): InstanceType<ApnModule['Notification']> {
  const note = new apn.Notification();
  note.rawPayload = parts.payload;
  note.topic = parts.topic;
  // node-apn types pushType as its own union; Herald checks it against Apple's list (apns-rules.ts).
  note.pushType = parts.pushType as typeof note.pushType;
  note.priority = parts.priority;
  note.expiry = parts.expiration;
  note.id = parts.apnsId;
  if (parts.collapseId !== undefined) note.collapseId = parts.collapseId;
  // node-apn sends what compile() answers (Provider.send): the text counted, not a second JSON.stringify of rawPayload.
  return Object.assign(note, { compile: () => body });
}

/**
 * Apple takes Live Activity pushes over token-based authentication only ("Certificate-based
 * authentication is not supported for these APNs pushes": Apple's answer in its developer forums,
 * thread 712499, and WWDC23 session 10185). Over a certificate it answers DeviceTokenNotForTopic,
 * which would condemn each activity's token while the app's alerts are delivered.
 */
const LIVE_ACTIVITY_OVER_CERTIFICATE =
  "liveactivity-needs-token-auth: Apple takes Live Activity pushes over token-based authentication only, and these APNs credentials are a certificate; rotate the app's APNs credentials to a .p8 signing key (herald apps rotate, PUT /admin/apps/:id/credentials)";

/**
 * The request's parts, or Herald's refusal of it: the last line of defence, a request Apple would
 * refuse for good is never sent. Its expiration counts from `now` only without an expiresAt (28
 * days from it), so parts made before a wait for budget go as they are.
 */
function partsOrRefusal(push: DevicePush, topic: string, auth: ApnsSettings['auth']['kind']): ApnsRequest | Refusal {
  const parts = apnsRequestParts(push, topic);
  const body = JSON.stringify(parts.payload);
  const problem = apnsRequestProblem(parts, Buffer.byteLength(body, 'utf8'));
  if (problem !== undefined) return { kind: 'permanent', reason: problem, notSent: true };
  if (parts.pushType === 'liveactivity' && auth !== 'token') return { kind: 'permanent', reason: LIVE_ACTIVITY_OVER_CERTIFICATE, notSent: true };
  return { parts, body };
}

async function sendOne(apn: ApnModule, provider: Provider, push: DevicePush, request: ApnsRequest): Promise<SendResult> {
  const result = await provider.send(buildNote(apn, request), push.token);
  const sent = result.sent[0] as { 'apns-unique-id'?: string; 'apns-id'?: string } | undefined;
  if (sent !== undefined) {
    const id = sent['apns-unique-id'] ?? sent['apns-id'];
    return { kind: 'delivered', ...(id !== undefined ? { providerMessageId: id } : {}) };
  }
  const failure = result.failed[0] as (ResponseFailure & NodeApnFailure) | undefined;
  return failure === undefined ? { kind: 'transient', reason: 'APNs client returned no result' } : toFailureResult(failure);
}

/**
 * Why a client certificate is refused at this moment (expired, or not valid yet), as an app's
 * credential failure (app-ban.ts: "credentials"), or undefined. Apple refuses it in the TLS
 * handshake, which node-apn reports only as a session closed before it was ready: a transport
 * failure, retried for the whole schedule, parked as the network's, never counted as the app's. A
 * certificate that cannot be read is left for node-apn to refuse.
 */
function certificateOutOfDate(auth: ApnsSettings['auth']): (nowMs: number) => string | undefined {
  const validity = auth.kind === 'certificate' ? apnsCertificateValidity(auth.cert) : undefined;
  if (validity === undefined) return () => undefined;
  return (nowMs) => {
    const problem = apnsCertificateDateProblem(validity, nowMs);
    if (problem === undefined) return undefined;
    return auth.kind === 'certificate' && auth.file !== undefined
      ? `credentials: the pushers' APNs certificate (APNS_CERT_FILE ${auth.file}) ${problem}; replace the file and restart the apns-pushers, or give the app credentials of its own`
      : `credentials: the app's APNs certificate ${problem}; rotate it (herald apps rotate, PUT /admin/apps/:id/credentials)`;
  };
}

/** What of node-apn's Provider opens its HTTP/2 session: its client (not in its type declarations). */
interface NodeApnClient {
  connect?: () => Promise<void>;
  session?: http2.ClientHttp2Session;
}

const clientOf = (provider: Provider): NodeApnClient | undefined => (provider as unknown as { client?: NodeApnClient }).client;

/**
 * Opens the provider's HTTP/2 session before the first push and waits (at most `timeoutMs`) until
 * it is connected or has failed; a failure is left for the first send to report, as before. A
 * pusher makes its provider before it takes rate budget, so budget is not held while it connects.
 */
async function connected(provider: Provider, timeoutMs: number): Promise<void> {
  const client = clientOf(provider);
  if (typeof client?.connect !== 'function') return;
  try {
    await client.connect();
  } catch {
    return;
  }
  if (client.session !== undefined) await settledWithin(client.session, timeoutMs);
}

/**
 * APNs through @parse/node-apn (token or certificate auth). All sends share one HTTP/2 session,
 * so concurrent `send` calls are multiplexed as concurrent streams. `now`: the clock a client
 * certificate's dates are judged by.
 */
export async function createApnsProvider(settings: ApnsSettings, logger: Logger, now: () => number = Date.now): Promise<PushProvider> {
  const imported = (await import('@parse/node-apn')) as ApnModule & { default?: ApnModule };
  const apn = imported.default ?? imported;
  // node-apn sends each notification with http2's request(): see async-bind.ts.
  useEndOfLifeAsyncBind();
  const provider = new apn.Provider(providerOptions(settings));
  await connected(provider, settings.requestTimeoutMs);
  const log = logger.child({ provider: 'apns' });
  const outOfDate = certificateOutOfDate(settings.auth);
  // Herald's own checks, none of them a request: the parts to send, or its refusal.
  const prepare = (push: DevicePush, target: SendTarget): ApnsRequest | Refusal => {
    const topic = target.apnsTopic ?? settings.defaultTopic;
    if (topic === undefined) return { kind: 'permanent', reason: 'no APNs topic for this app', notSent: true };
    const certificate = outOfDate(now());
    if (certificate !== undefined) return { kind: 'permanent', reason: certificate, notSent: true };
    return partsOrRefusal(push, topic, settings.auth.kind);
  };
  return {
    platform: 'apns',
    prepare: (push, target) => prepare(push, target) as unknown as Prepared | Refusal,
    async send(push: DevicePush, target: SendTarget, prepared?: Prepared, stale?: boolean): Promise<SendResult> {
      try {
        const checked = (prepared as unknown as ApnsRequest | undefined) ?? prepare(push, target);
        if (isRefusal(checked)) return checked;
        // Checked before a wait for budget (up to half a lease): a certificate that expired meanwhile
        // is refused as prepare refuses it, with its "rotate it", not sent for Apple's TLS to refuse.
        const certificate = stale === true ? outOfDate(now()) : undefined;
        if (certificate !== undefined) return { kind: 'permanent', reason: certificate, notSent: true };
        return await sendOne(apn, provider, push, checked);
      } catch (err) {
        // Once per app and error every few seconds, then how many more: an unreachable provider fails every push.
        logSummary(log, 'warn', 'apns send threw').note(`${push.app}\u0000${(err as Error).message}`, { err, app: push.app, pushId: push.pushId });
        return { kind: 'transient', reason: `transport: ${(err as Error).message}`, outage: true };
      }
    },
    // node-apn's Provider.shutdown returns nothing; its callback fires once the session is closed.
    // A session still connecting (APNs silent: opened when the provider was made) would never
    // close, so it is destroyed first; its pending requests fail as transport errors.
    close: () => {
      const session = clientOf(provider)?.session;
      if (session?.connecting === true) session.destroy();
      return new Promise<void>((resolve) => void provider.shutdown(() => resolve()));
    },
  };
}
