import { randomUUID } from 'node:crypto';
import type { ClientRequest } from 'node:http';
import type { DevicePush } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import type { App, Credential } from 'firebase-admin/app';
import { classifyFcmError } from './fcm-classify.ts';
import { FcmAgent } from './fcm-agent.ts';
import { buildFcmMessage, type FcmMessage } from './fcm-message.ts';
import { firebaseAdminSend, type FcmSend } from './fcm-request.ts';
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

/** One request, answered by FCM or cut at the deadline (the request is destroyed, so the server sees the client go). */
async function sendOnce(send: FcmSend, agent: FcmAgent, message: FcmMessage, timeoutMs: number): Promise<SendResult> {
  let request: ClientRequest | undefined;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<SendResult>((resolve) => {
    timer = setTimeout(() => {
      const reason = `no answer from FCM within ${timeoutMs} ms`;
      request?.destroy(new Error(reason));
      resolve({ kind: 'transient', reason: `timeout: ${reason}` });
    }, timeoutMs);
  });
  const answered = send(message, agent.forSend((req) => (request = req)), timeoutMs).then(
    (answer): SendResult => (answer.ok ? { kind: 'delivered', providerMessageId: answer.name } : classifyFcmError(answer.failure)),
  );
  try {
    return await Promise.race([answered, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * FCM HTTP v1 through firebase-admin's HTTP client (fcm-request.ts): keep-alive HTTP/1.1, up to
 * `maxConnections` sockets, one attempt per send. Each provider is its own firebase app (its own
 * credential and token cache).
 */
export async function createFcmProvider(settings: FcmSettings, logger: Logger): Promise<PushProvider> {
  const [{ initializeApp, deleteApp, SDK_VERSION }, { getMessaging }] = await Promise.all([import('firebase-admin/app'), import('firebase-admin/messaging')]);
  const agent = new FcmAgent({
    maxSockets: settings.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    ...(settings.endpoint !== undefined ? { endpoint: settings.endpoint } : {}),
    ...(settings.proxy !== undefined ? { proxy: settings.proxy } : {}),
  });
  const { credential, tokenAgent } = await credentialFor(settings);
  const app: App = initializeApp({ credential, projectId: settings.projectId, httpAgent: agent }, `herald-fcm-${randomUUID()}`);
  const close = async (): Promise<void> => {
    await deleteApp(app);
    agent.destroy();
    tokenAgent?.destroy();
  };
  let send: FcmSend;
  try {
    send = await firebaseAdminSend(getMessaging(app), SDK_VERSION);
  } catch (err) {
    await close();
    throw err;
  }
  const log = logger.child({ provider: 'fcm' });
  return {
    platform: 'fcm',
    async send(push: DevicePush): Promise<SendResult> {
      try {
        const message = buildFcmMessage(push);
        // The last line of defence: a message Google would refuse for good is never sent.
        const problem = fcmMessageProblem(message);
        if (problem !== undefined) return { kind: 'permanent', reason: problem };
        return await sendOnce(send, agent, message, settings.requestTimeoutMs);
      } catch (err) {
        log.warn({ err, pushId: push.pushId }, 'fcm send threw');
        return { kind: 'transient', reason: `transport: ${(err as Error).message}` };
      }
    },
    close,
  };
}
