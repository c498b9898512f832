import type { DevicePush } from '@herald/contracts';
import { logSummary, type Logger } from '@herald/logging';
import type { Credential } from 'firebase-admin/app';
import { classifyFcmError } from './fcm-classify.ts';
import { ProxyAgent } from './proxy-agent.ts';
import { buildFcmMessage, fcmTtlFromNow, type FcmMessage } from './fcm-message.ts';
import { AccessTokens, FcmCredentialRefused, fcmSender } from './fcm-request.ts';
import { FcmSessions, FcmTimeoutError } from './fcm-sessions.ts';
import { fcmMessageProblem } from './fcm-rules.ts';
import { isRefusal, type Prepared, type PushProvider, type Refusal, type SendResult } from './push-provider.ts';
import type { FcmSettings } from './settings.ts';

/** Google's front ends allow 100 streams a session: room for a pusher's full window (prefetch) with sessions to spare. */
const DEFAULT_MAX_SESSIONS = 16;

/**
 * A service account fetches its OAuth tokens from Google's token server: through the proxy too (an
 * agent of its own, so a token fetch is not counted as a send's attempt), never redirected to the
 * endpoint and with Node's own roots (the endpoint's CA is for the endpoint). firebase-admin
 * 13.10.0 dropped the agent for a service account given as an object; patches/ passes it on (ADR 0007).
 * `credential` makes a new credential each call: AccessTokens asks for one after FCM refused a token
 * or a fetch hung.
 */
async function credentialFor(settings: FcmSettings): Promise<{ credential: () => Credential; tokenAgent?: ProxyAgent }> {
  if (settings.credential.kind === 'access-token') {
    const accessToken = settings.credential.accessToken;
    return { credential: () => ({ getAccessToken: () => Promise.resolve({ access_token: accessToken, expires_in: 3600 }) }) };
  }
  const { cert } = await import('firebase-admin/app');
  const tokenAgent = settings.proxy !== undefined ? new ProxyAgent(settings.proxy) : undefined;
  const account = JSON.parse(settings.credential.json) as object;
  return { credential: () => cert(account, tokenAgent), ...(tokenAgent !== undefined && { tokenAgent }) };
}

/**
 * FCM HTTP v1 over HTTP/2 sessions of its own (fcm-sessions.ts), with the credential's tokens
 * cached (fcm-request.ts); one attempt per send. firebase-admin supplies the credential (a service
 * account's token flow) and the client headers; its own HTTP clients are not used: the HTTP/1.1
 * one costs a socket and TLS records per request, and the HTTP/2 one opens a session per call and
 * cannot be pointed at another endpoint or a proxy.
 */
export async function createFcmProvider(settings: FcmSettings, logger: Logger, now: () => Date = () => new Date()): Promise<PushProvider> {
  const sessions = new FcmSessions({
    maxSessions: settings.maxSessions ?? DEFAULT_MAX_SESSIONS,
    ...(settings.endpoint !== undefined ? { endpoint: settings.endpoint } : {}),
    ...(settings.proxy !== undefined ? { proxy: settings.proxy } : {}),
  });
  const { credential, tokenAgent } = await credentialFor(settings);
  // Imported here, not at the top of fcm-request.ts: a static import would load firebase-admin into
  // every process that bundles the providers library (the APNs pusher, the demuxer, the API).
  const { SDK_VERSION } = await import('firebase-admin/app');
  const tokens = new AccessTokens(credential(), credential);
  const send = fcmSender(sessions, tokens, settings.projectId, SDK_VERSION);
  // Connected, with a token, before the first push, each waited for at most the request timeout;
  // a failure is the first send's to report.
  await Promise.all([sessions.warm(settings.requestTimeoutMs), Promise.resolve(tokens.get(Date.now(), settings.requestTimeoutMs)).catch(() => undefined)]);
  const log = logger.child({ provider: 'fcm' });
  // android.ttl counts from now by the pusher's clock (PostgreSQL's), as its expiry was judged.
  // The last line of defence: a message Google would refuse for good is never sent.
  const prepare = (push: DevicePush): FcmMessage | Refusal => {
    const message = buildFcmMessage(push, now());
    const problem = fcmMessageProblem(message);
    return problem === undefined ? message : { kind: 'permanent', reason: problem, notSent: true };
  };
  return {
    platform: 'fcm',
    prepare: (push) => prepare(push) as unknown as Prepared | Refusal,
    async send(push: DevicePush, _target, prepared?: Prepared, stale?: boolean): Promise<SendResult> {
      try {
        const checked = (prepared as unknown as FcmMessage | undefined) ?? prepare(push);
        if (isRefusal(checked)) return checked;
        // Made before a wait for budget: its ttl (left until expiresAt) counts from now; checked, it can only be shorter.
        if (stale === true && push.expiresAt !== undefined) fcmTtlFromNow(checked, push, now());
        const answer = await send(checked, settings.requestTimeoutMs);
        return answer.ok ? { kind: 'delivered', providerMessageId: answer.name } : classifyFcmError(answer.failure);
      } catch (err) {
        if (err instanceof FcmTimeoutError) return { kind: 'transient', reason: `timeout: ${err.message}`, outage: true };
        // The app's service account refused: counted towards its ban (app-ban.ts), with an alarm, not retried as a network error.
        if (err instanceof FcmCredentialRefused) return { kind: 'permanent', reason: `invalid-credential: ${err.message}` };
        const code = (err as { code?: unknown }).code;
        // A token the credential could not mint is firebase-admin's coded error (app/invalid-credential): classified as before.
        if (typeof code === 'string' && code.startsWith('app/')) return classifyFcmError({ code, message: (err as Error).message });
        // Once per app and error every few seconds, then how many more: an unreachable provider fails every push.
        logSummary(log, 'warn', 'fcm send failed in transport').note(`${push.app}\u0000${(err as Error).message}`, { err, app: push.app, pushId: push.pushId });
        return { kind: 'transient', reason: `transport: ${(err as Error).message}`, outage: true };
      }
    },
    async close() {
      sessions.close();
      tokenAgent?.destroy();
    },
  };
}
