import { json, type Answer, type SandboxContext } from './exchange.ts';
import type { FaultPlatform } from './faults.ts';
import type { DeliveryQuery } from './delivery-log.ts';
import type { DeviceOs } from './offline-retention.ts';

/** What `POST /devices/offline` and `/devices/online` take. */
export interface DeviceSpec {
  platform: FaultPlatform;
  token: string;
  /** FCM only: which storage rule applies (Android `ttl`, or Apple's `apns-expiration`); default android. */
  os?: DeviceOs;
}

export type ParsedDevice = { ok: true; device: DeviceSpec } | { ok: false; reason: string };

/** Validate a `/devices/offline|online` body. */
export function parseDeviceSpec(raw: Buffer): ParsedDevice {
  let o: { platform?: unknown; token?: unknown; os?: unknown };
  try {
    o = JSON.parse(raw.toString('utf8')) as typeof o;
  } catch {
    return { ok: false, reason: 'body must be JSON' };
  }
  if (typeof o !== 'object' || o === null) return { ok: false, reason: 'body must be a JSON object' };
  if (o.platform !== 'apns' && o.platform !== 'fcm') return { ok: false, reason: 'platform must be "apns" or "fcm"' };
  if (typeof o.token !== 'string' || o.token.length === 0) return { ok: false, reason: 'token must be a non-empty string' };
  if (o.os !== undefined && o.os !== 'android' && o.os !== 'ios') return { ok: false, reason: 'os must be "android" or "ios"' };
  if (o.platform === 'apns' && o.os === 'android') return { ok: false, reason: 'an APNs device is an Apple device' };
  return { ok: true, device: { platform: o.platform, token: o.token, ...(o.os !== undefined ? { os: o.os } : {}) } };
}

function deliveryQuery(params: URLSearchParams): DeliveryQuery {
  const q: DeliveryQuery = {};
  const platform = params.get('platform');
  const token = params.get('token');
  if (platform !== null && platform !== '') q.platform = platform;
  if (token !== null && token !== '') q.token = token;
  return q;
}

function setOnline(online: boolean, body: Buffer, ctx: SandboxContext): Answer {
  const parsed = parseDeviceSpec(body);
  if (!parsed.ok) return json(400, { error: parsed.reason });
  const { platform, token, os } = parsed.device;
  if (!online) {
    ctx.devices.goOffline(platform, token, os);
    return json(200, { platform, token, online: false });
  }
  const { pushes, deletedNotice } = ctx.devices.goOnline(platform, token);
  return json(200, { platform, token, online: true, delivered: pushes.length, ...(deletedNotice ? { deletedMessages: true } : {}) });
}

/** The `/devices` routes, or undefined for any other route. */
export function routeDevices(method: string, url: URL, body: Buffer, ctx: SandboxContext): Answer | undefined {
  switch (`${method} ${url.pathname}`) {
    case 'POST /devices/offline':
      return setOnline(false, body, ctx);
    case 'POST /devices/online':
      return setOnline(true, body, ctx);
    case 'GET /devices/deliveries':
      return json(200, ctx.devices.deliveries(deliveryQuery(url.searchParams)));
    case 'GET /devices/discards':
      return json(200, ctx.devices.discards(deliveryQuery(url.searchParams)));
    case 'DELETE /devices':
      ctx.devices.clear();
      return json(200, { cleared: true });
    default:
      return undefined;
  }
}
