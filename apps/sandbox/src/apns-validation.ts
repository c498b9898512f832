/** APNs limits a regular notification payload to 4 KB. */
export const APNS_MAX_PAYLOAD_BYTES = 4096;
const MAX_COLLAPSE_ID_BYTES = 64;
const PUSH_TYPES = new Set([
  'alert', 'background', 'location', 'voip', 'complication', 'fileprovider', 'mdm', 'liveactivity', 'pushtotalk', 'widgets', 'controls',
]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type Headers = Record<string, string | string[] | undefined>;

export interface ApnsRequest {
  method: string;
  path: string;
  headers: Headers;
  body: Buffer;
}

export type ApnsRejection = { ok: false; status: number; reason: string };
export type ApnsRoute = { ok: true; token: string } | ApnsRejection;
export type ApnsValidation = { ok: true; token: string; apnsId: string | undefined } | ApnsRejection;

const reject = (status: number, reason: string): ApnsRejection => ({ ok: false, status, reason });

export const header = (headers: Headers, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** `POST /3/device/<token>`; anything else is BadPath / MethodNotAllowed as Apple answers. */
export function routeApnsRequest(method: string, path: string): ApnsRoute {
  const match = /^\/3\/device\/([^/?]*)$/.exec(path.split('?')[0] ?? '');
  if (match === null) return reject(404, 'BadPath');
  if (method !== 'POST') return reject(405, 'MethodNotAllowed');
  const token = decodeURIComponent(match[1] ?? '');
  if (token.length === 0) return reject(400, 'MissingDeviceToken');
  return { ok: true, token };
}

function checkHeaders(headers: Headers): ApnsRejection | undefined {
  const topic = header(headers, 'apns-topic');
  if (topic === undefined || topic.length === 0) return reject(400, 'MissingTopic');
  const pushType = header(headers, 'apns-push-type');
  if (pushType !== undefined && !PUSH_TYPES.has(pushType)) return reject(400, 'InvalidPushType');
  const priority = header(headers, 'apns-priority');
  if (priority !== undefined && priority !== '5' && priority !== '10' && priority !== '1') return reject(400, 'BadPriority');
  if (pushType === 'background' && priority === '10') return reject(400, 'BadPriority');
  const expiration = header(headers, 'apns-expiration');
  if (expiration !== undefined && !/^\d+$/.test(expiration)) return reject(400, 'BadExpirationDate');
  const collapseId = header(headers, 'apns-collapse-id');
  if (collapseId !== undefined && Buffer.byteLength(collapseId) > MAX_COLLAPSE_ID_BYTES) return reject(400, 'BadCollapseId');
  const apnsId = header(headers, 'apns-id');
  if (apnsId !== undefined && !UUID.test(apnsId)) return reject(400, 'BadMessageId');
  return undefined;
}

function checkPayload(body: Buffer): ApnsRejection | undefined {
  if (body.length === 0) return reject(400, 'PayloadEmpty');
  if (body.length > APNS_MAX_PAYLOAD_BYTES) return reject(413, 'PayloadTooLarge');
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    return reject(400, 'BadPayload');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return reject(400, 'BadPayload');
  const aps = (payload as Record<string, unknown>)['aps'];
  if (typeof aps !== 'object' || aps === null || Array.isArray(aps)) return reject(400, 'PayloadEmpty');
  return undefined;
}

/** Header and payload checks of an authenticated APNs request, in Apple's order and with Apple's reasons. */
export function validateApnsRequest(request: ApnsRequest): ApnsValidation {
  const route = routeApnsRequest(request.method, request.path);
  if (!route.ok) return route;
  const problem = checkHeaders(request.headers) ?? checkPayload(request.body);
  if (problem !== undefined) return problem;
  return { ok: true, token: route.token, apnsId: header(request.headers, 'apns-id') };
}
