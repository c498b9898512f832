import { randomUUID } from 'node:crypto';
import type { ConnectionTokens, ProviderTokenVerifier } from './apns-jwt.ts';
import { header, type ApnsRequest } from './apns-request.ts';
import { routeApnsRequest, validateApnsRequest } from './apns-validation.ts';
import { json, sleep, type Answer, type Handled, type SandboxContext } from './exchange.ts';
import type { ApnsFaultError, Fault } from './faults.ts';

const FAULT_STATUS: Record<ApnsFaultError, number> = {
  Unregistered: 410,
  BadDeviceToken: 400,
  DeviceTokenNotForTopic: 400,
  TooManyRequests: 429,
  InternalServerError: 500,
  ServiceUnavailable: 503,
  PayloadTooLarge: 413,
};

export interface ApnsIncoming extends ApnsRequest {
  /** The TLS client presented a certificate the sandbox trusts (certificate-based auth). */
  clientCertificateAuthorized: boolean;
  /** The topic that certificate names (`certificateTopic`, apns-topic.ts), if it names one. */
  clientCertificateTopic?: string;
  /** The provider tokens this request's connection has sent before. */
  connectionTokens?: ConnectionTokens;
  /** Called once the request's provider token has checked out (APNs then allows the connection more than one stream). */
  onValidToken?: () => void;
}

/** Apple's error body: `{"reason":"..."}`, plus `timestamp` (ms) for 410 Unregistered. */
export function apnsError(status: number, reason: string, apnsId: string, nowMs = Date.now()): Answer {
  const body = status === 410 ? { reason, timestamp: nowMs } : { reason };
  return json(status, body, { 'apns-id': apnsId });
}

function faultAnswer(fault: Fault, apnsId: string): Answer | undefined {
  if (fault.error === undefined) return undefined;
  const error = fault.error as ApnsFaultError;
  const answer = apnsError(FAULT_STATUS[error], error, apnsId, fault.unregisteredAtMs);
  if (fault.retryAfterSeconds !== undefined) answer.headers['retry-after'] = String(fault.retryAfterSeconds);
  return answer;
}

const success = (apnsId: string): Answer => ({
  status: 200,
  headers: { 'apns-id': apnsId, 'apns-unique-id': randomUUID() },
  body: '',
});

const refused = (token: string | undefined, answer: Answer): Handled => ({ token, answer, warnings: [], deliver: false });

/** Authenticate, validate, apply any injected fault, and answer as APNs would. */
export async function handleApnsRequest(req: ApnsIncoming, tokens: ProviderTokenVerifier, ctx: SandboxContext): Promise<Handled> {
  const claimedId = header(req.headers, 'apns-id');
  const apnsId = claimedId ?? randomUUID();
  const route = routeApnsRequest(req.method, req.path);
  if (!route.ok) return refused(undefined, apnsError(route.status, route.reason, apnsId));
  const authorization = header(req.headers, 'authorization');
  const certificateAuth = authorization === undefined && req.clientCertificateAuthorized;
  if (!certificateAuth) {
    const auth = tokens.check(authorization);
    if (!auth.ok) return refused(route.token, apnsError(403, auth.reason, apnsId));
    if (req.connectionTokens?.use(authorization ?? '') === false) return refused(route.token, apnsError(429, 'TooManyProviderTokenUpdates', apnsId));
    req.onValidToken?.();
  }
  const valid = validateApnsRequest(req, certificateAuth ? req.clientCertificateTopic : undefined);
  if (!valid.ok) return refused(route.token, apnsError(valid.status, valid.reason, apnsId));
  const fault = ctx.faults.take('apns', route.token);
  if (fault?.delayMs !== undefined) await sleep(fault.delayMs);
  const answer = (fault && faultAnswer(fault, apnsId)) ?? success(apnsId);
  return { token: route.token, answer, warnings: valid.warnings, deliver: answer.status === 200, ...(fault?.goaway === true && fault.error !== undefined && { goaway: fault.error }) };
}
