import { reject, type ApnsRejection } from './apns-request.ts';
import { isObject, type Json } from './json.ts';

/**
 * Apple, "Generating a remote notification": "For regular remote notifications, the maximum size
 * is 4KB (4096 bytes). For Voice over Internet Protocol (VoIP) notifications, the maximum size is
 * 5KB (5120 bytes)."
 */
export const APNS_MAX_PAYLOAD_BYTES = 4096;
export const APNS_MAX_VOIP_PAYLOAD_BYTES = 5120;

export type ParsedApnsPayload = { ok: true; payload: Json; aps: Json } | ApnsRejection;

export const maxPayloadBytes = (pushType: string | undefined): number =>
  pushType === 'voip' ? APNS_MAX_VOIP_PAYLOAD_BYTES : APNS_MAX_PAYLOAD_BYTES;

/**
 * Size, JSON and the `aps` dictionary. Apple's reason table has no code for a body that is not
 * JSON; the sandbox answers BadPayload for it (PayloadEmpty for an empty body or no `aps`).
 */
export function parseApnsPayload(body: Buffer, pushType: string | undefined): ParsedApnsPayload {
  if (body.length === 0) return reject(400, 'PayloadEmpty');
  if (body.length > maxPayloadBytes(pushType)) return reject(413, 'PayloadTooLarge');
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    return reject(400, 'BadPayload');
  }
  if (!isObject(payload)) return reject(400, 'BadPayload');
  const aps = payload['aps'];
  if (!isObject(aps)) return reject(400, 'PayloadEmpty');
  return { ok: true, payload, aps };
}
