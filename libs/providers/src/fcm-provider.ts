import { randomUUID } from 'node:crypto';
import type { DevicePush } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import type { App, Credential } from 'firebase-admin/app';
import type { Message, Messaging } from 'firebase-admin/messaging';
import { classifyFcmError } from './fcm-classify.ts';
import { FcmAgent, NO_RETRY_CODE, retryAfterMs, type FcmAttempt } from './fcm-agent.ts';
import { buildFcmMessage, toFirebaseAdminMessage } from './fcm-message.ts';
import { fcmMessageProblem } from './fcm-rules.ts';
import type { PushProvider, SendResult } from './push-provider.ts';
import type { FcmSettings } from './settings.ts';

const DEFAULT_MAX_CONNECTIONS = 128;

/**
 * A service account fetches its OAuth tokens from Google's token server: through the proxy too (an
 * agent of its own, so a token fetch is not counted as a send's attempt), never redirected to the
 * endpoint and with Node's own roots (the endpoint's CA is for the endpoint).
 */
async function credentialFor(settings: FcmSettings): Promise<{ credential: Credential; tokenAgent?: FcmAgent }> {
  if (settings.credential.kind === 'access-token') {
    const accessToken = settings.credential.accessToken;
    return { credential: { getAccessToken: () => Promise.resolve({ access_token: accessToken, expires_in: 3600 }) } };
  }
  const { cert } = await import('firebase-admin/app');
  const tokenAgent = settings.proxy !== undefined ? new FcmAgent({ maxSockets: 2, proxy: settings.proxy }) : undefined;
  return { credential: cert(JSON.parse(settings.credential.json) as object, tokenAgent), ...(tokenAgent !== undefined && { tokenAgent }) };
}

/** Turn what firebase-admin threw (plus what the agent saw on the wire) into a SendResult. */
function failureResult(err: unknown, attempt: FcmAttempt): SendResult {
  const e = err as { code?: string; message?: string };
  const retryAfter = retryAfterMs(attempt.retryAfter);
  if (attempt.cancelled !== undefined) return { kind: 'transient', reason: `timeout: ${attempt.cancelled.message}` };
  // The agent refused the SDK's retry of a 503 (or reset): classify the answer that caused it.
  const refusedRetry = e.message?.includes(NO_RETRY_CODE) === true || e.message?.includes('one attempt per send') === true;
  if (refusedRetry && attempt.status !== undefined) {
    return { kind: 'transient', reason: `HTTP ${attempt.status}`, ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}) };
  }
  return classifyFcmError({
    ...(e.code !== undefined ? { code: e.code } : {}),
    ...(e.message !== undefined ? { message: e.message } : {}),
    ...(attempt.status !== undefined ? { httpStatus: attempt.status } : {}),
    ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
  });
}

/** A 503 that firebase-admin would wait out and retry: Herald retries through its queues instead. */
function retryableResult(attempt: FcmAttempt): SendResult {
  const retryAfter = retryAfterMs(attempt.retryAfter);
  return { kind: 'transient', reason: `UNAVAILABLE: HTTP ${attempt.status ?? 503}`, ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}) };
}

async function sendOnce(messaging: Messaging, agent: FcmAgent, message: Message, timeoutMs: number): Promise<SendResult> {
  const attempt: FcmAttempt = { requests: 0 };
  const early = new Promise<SendResult>((resolve) => {
    attempt.onRetryable = () => resolve(retryableResult(attempt));
  });
  const timer = setTimeout(() => {
    attempt.cancelled = new Error(`no answer from FCM within ${timeoutMs} ms`);
    attempt.request?.destroy(attempt.cancelled);
  }, timeoutMs);
  const sent = agent.attempts
    .run(attempt, () => messaging.send(message))
    .then((name): SendResult => ({ kind: 'delivered', providerMessageId: name }), (err: unknown) => failureResult(err, attempt));
  try {
    return await Promise.race([sent, early]);
  } finally {
    // After an early answer the SDK's pending retry is refused by the agent; let its promise settle quietly.
    void sent.finally(() => clearTimeout(timer));
  }
}

/**
 * FCM HTTP v1 through firebase-admin's messaging.send (HTTP/1.1 over keep-alive TLS sockets;
 * concurrent sends use up to `maxConnections` sockets). Each provider is its own firebase app.
 */
export async function createFcmProvider(settings: FcmSettings, logger: Logger): Promise<PushProvider> {
  const [{ initializeApp, deleteApp }, { getMessaging }] = await Promise.all([import('firebase-admin/app'), import('firebase-admin/messaging')]);
  const agent = new FcmAgent({
    maxSockets: settings.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    ...(settings.endpoint !== undefined ? { endpoint: settings.endpoint } : {}),
    ...(settings.proxy !== undefined ? { proxy: settings.proxy } : {}),
  });
  const { credential, tokenAgent } = await credentialFor(settings);
  const app: App = initializeApp({ credential, projectId: settings.projectId, httpAgent: agent }, `herald-fcm-${randomUUID()}`);
  const messaging = getMessaging(app);
  const log = logger.child({ provider: 'fcm' });
  return {
    platform: 'fcm',
    async send(push: DevicePush): Promise<SendResult> {
      try {
        const message = buildFcmMessage(push);
        // The last line of defence: a message Google would refuse for good is never sent.
        const problem = fcmMessageProblem(message);
        if (problem !== undefined) return { kind: 'permanent', reason: problem };
        return await sendOnce(messaging, agent, toFirebaseAdminMessage(message) as unknown as Message, settings.requestTimeoutMs);
      } catch (err) {
        log.warn({ err, pushId: push.pushId }, 'fcm send threw');
        return { kind: 'transient', reason: `transport: ${(err as Error).message}` };
      }
    },
    close: async () => {
      await deleteApp(app);
      agent.destroy();
      tokenAgent?.destroy();
    },
  };
}
