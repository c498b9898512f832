import { checkAps } from './apns-aps-rules.ts';
import { apnsHeaderWarnings, checkApnsHeaders } from './apns-headers.ts';
import { parseApnsPayload } from './apns-payload.ts';
import { header, reject, type ApnsRejection, type ApnsRequest } from './apns-request.ts';

export { header, type ApnsRequest, type Headers } from './apns-request.ts';
export { APNS_MAX_PAYLOAD_BYTES, APNS_MAX_VOIP_PAYLOAD_BYTES } from './apns-payload.ts';

export type ApnsRoute = { ok: true; token: string } | ApnsRejection;
/** Accepted, with `warnings` for what Apple advises against without refusing it. */
export type ApnsValidation = { ok: true; token: string; apnsId: string | undefined; warnings: string[] } | ApnsRejection;

/**
 * A device token as Apple issues it: hexadecimal (32 bytes = 64 hex digits today). Apple says
 * tokens can change length, so any even-length hex string of 64–200 digits, either case, passes.
 */
export const isApnsDeviceToken = (token: string): boolean => /^(?:[0-9a-fA-F]{2}){32,100}$/.test(token);

/** `POST /3/device/<token>`; anything else is BadPath / MethodNotAllowed as Apple answers. */
export function routeApnsRequest(method: string, path: string): ApnsRoute {
  const match = /^\/3\/device\/([^/?]*)$/.exec(path.split('?')[0] ?? '');
  if (match === null) return reject(404, 'BadPath');
  if (method !== 'POST') return reject(405, 'MethodNotAllowed');
  const token = decodeURIComponent(match[1] ?? '');
  if (token.length === 0) return reject(400, 'MissingDeviceToken');
  return { ok: true, token };
}

/**
 * Token, header and payload checks of an authenticated APNs request, with Apple's reasons;
 * `certificateTopic`: the client certificate's topic, when the request is certificate-authenticated.
 */
export function validateApnsRequest(request: ApnsRequest, certificateTopic?: string): ApnsValidation {
  const route = routeApnsRequest(request.method, request.path);
  if (!route.ok) return route;
  if (!isApnsDeviceToken(route.token)) return reject(400, 'BadDeviceToken');
  const headerProblem = checkApnsHeaders(request.headers, certificateTopic);
  if (headerProblem !== undefined) return headerProblem;
  const pushType = header(request.headers, 'apns-push-type');
  const parsed = parseApnsPayload(request.body, pushType);
  if (!parsed.ok) return parsed;
  const warnings = [...apnsHeaderWarnings(request.headers, certificateTopic), ...checkAps(pushType, parsed.aps).warnings];
  return { ok: true, token: route.token, apnsId: header(request.headers, 'apns-id'), warnings };
}
