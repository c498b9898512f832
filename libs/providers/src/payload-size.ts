import type { Platform, PushContent } from '@herald/contracts';
import { apnsPayloadOf } from './apns-notification.ts';

/** APNs: the JSON payload of a regular (non-VoIP) notification. */
export const APNS_MAX_PAYLOAD_BYTES = 4096;
/** FCM: notification + data of a message. */
export const FCM_MAX_PAYLOAD_BYTES = 4096;

const bytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** Bytes FCM counts against its limit: the notification fields and the data map. */
export function fcmPayloadBytes(c: PushContent): number {
  const notification = { title: c.title, body: c.body, image: c.imageUrl };
  return bytes({ notification, data: c.data ?? {} });
}

/**
 * A readable reason when the content cannot fit the provider's payload limit, else undefined.
 * The Demuxer parks such jobs before fan-out; priority and collapse key travel in headers, not the payload.
 */
export function checkPayloadSize(platform: Platform, content: PushContent): string | undefined {
  if (platform === 'apns') {
    const size = bytes(apnsPayloadOf(content));
    return size > APNS_MAX_PAYLOAD_BYTES ? `payload too large: APNs payload is ${size} bytes, the limit is ${APNS_MAX_PAYLOAD_BYTES}` : undefined;
  }
  const size = fcmPayloadBytes(content);
  return size > FCM_MAX_PAYLOAD_BYTES ? `payload too large: FCM notification + data is ${size} bytes, the limit is ${FCM_MAX_PAYLOAD_BYTES}` : undefined;
}
