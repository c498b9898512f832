import type { Agent } from 'node:https';
import type { Messaging } from 'firebase-admin/messaging';
import { retryAfterMs } from './fcm-agent.ts';
import type { FcmFailure } from './fcm-classify.ts';
import type { FcmMessage } from './fcm-message.ts';

const FCM_HOST = 'fcm.googleapis.com';

/** What FCM answered one send: its message name, or a failure in the classifier's terms. */
export type FcmAnswer = { ok: true; name: string } | { ok: false; failure: FcmFailure };

/**
 * One v1 send through firebase-admin's own HTTP client, the one `messaging.send` uses (the app's
 * cached OAuth token, Google's headers, keep-alive HTTP/1.1 through `agent`), given Herald's v1
 * message as Google documents it (buildFcmMessage, checked by fcm-rules.ts). `messaging.send`
 * itself would deep-copy the message, re-validate and rename it, and hide the answer's status and
 * Retry-After; the client returns them.
 */
export type FcmSend = (message: FcmMessage, agent: Agent, timeoutMs: number) => Promise<FcmAnswer>;

interface ClientResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  data: unknown;
  isJson(): boolean;
}
interface HttpClient {
  retry?: unknown;
  send(request: { method: string; url: string; data: object; headers: Record<string, string>; timeout: number; httpAgent: Agent }): Promise<ClientResponse>;
}
interface MessagingInternals {
  messagingRequestHandler?: { httpClient?: HttpClient };
  getUrlPath?: () => Promise<string>;
}

/** firebase-admin moved the internals this provider sends through (checked when a provider is created). */
export class FirebaseAdminShapeError extends Error {
  override readonly name = 'FirebaseAdminShapeError';
}

/** The failure in an error response's body: FCM's own code (details[].errorCode) first, else the status, as firebase-admin reads it. */
function failureOf(res: ClientResponse): FcmFailure {
  const retryAfter = res.headers['retry-after'];
  const wait = retryAfterMs(typeof retryAfter === 'string' ? retryAfter : undefined);
  const body = res.isJson() ? (res.data as { error?: { status?: string; message?: string; details?: Array<{ '@type'?: string; errorCode?: string }> } }) : {};
  const fcmCode = body.error?.details?.find((d) => d['@type']?.endsWith('google.firebase.fcm.v1.FcmError') === true)?.errorCode;
  const code = fcmCode ?? body.error?.status;
  // A 503 reads as before firebase-admin's retries were turned off: "UNAVAILABLE: HTTP 503".
  const message = res.status === 503 ? 'HTTP 503' : body.error?.message;
  return {
    ...(code !== undefined && { code }),
    ...(message !== undefined && { message }),
    httpStatus: res.status,
    ...(wait !== undefined && { retryAfterMs: wait }),
  };
}

export async function firebaseAdminSend(messaging: Messaging, sdkVersion: string): Promise<FcmSend> {
  const internals = messaging as unknown as MessagingInternals;
  const client = internals.messagingRequestHandler?.httpClient;
  if (client === undefined || typeof client.send !== 'function' || typeof internals.getUrlPath !== 'function') {
    throw new FirebaseAdminShapeError('this firebase-admin has no messaging HTTP client (expected 13.x messagingRequestHandler.httpClient)');
  }
  // This app's client only: Herald retries through its queues (with back-off and the shared limiter), so a send is one attempt.
  client.retry = null;
  const url = `https://${FCM_HOST}${await internals.getUrlPath.call(messaging)}`;
  const headers = { 'X-Firebase-Client': `fire-admin-node/${sdkVersion}`, access_token_auth: 'true' };
  return (message, agent, timeoutMs) =>
    // The client's own timeout (an idle timer on the socket) only backs up the caller's deadline.
    client.send({ method: 'POST', url, data: { message }, headers, timeout: timeoutMs + 1000, httpAgent: agent }).then(
      (res): FcmAnswer => {
        const name = res.isJson() ? (res.data as { name?: unknown }).name : undefined;
        return typeof name === 'string' ? { ok: true, name } : { ok: false, failure: { code: 'INTERNAL', message: 'FCM answered without a message name', httpStatus: res.status } };
      },
      (err: { response?: ClientResponse; code?: string; message?: string }): FcmAnswer =>
        err.response !== undefined
          ? { ok: false, failure: failureOf(err.response) }
          // firebase-admin's own retries are off, so its network errors mean this one attempt failed.
          : { ok: false, failure: { ...(err.code !== undefined && { code: err.code }), ...(err.message !== undefined && { message: err.message }) } },
    );
}
