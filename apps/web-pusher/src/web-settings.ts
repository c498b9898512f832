import type { ConfigOf } from '@herald/config';
import { webConnection } from '@herald/delivery';
import type { VapidCredentials, WebPushSettings } from '@herald/providers';
import type { webPusherConfig } from './config.ts';

type Config = ConfigOf<typeof webPusherConfig>;

/** The process-level VAPID keys: all three variables, or none (then apps without their own keys park as `no-vapid-keys`). */
export function processVapid(config: Config): VapidCredentials | undefined {
  const { WEB_PUSH_VAPID_PUBLIC_KEY: publicKey, WEB_PUSH_VAPID_PRIVATE_KEY: privateKey, WEB_PUSH_VAPID_SUBJECT: subject } = config;
  const set = [publicKey, privateKey, subject].filter((v) => v !== undefined).length;
  if (set === 0) return undefined;
  if (publicKey === undefined || privateKey === undefined || subject === undefined) {
    throw new Error('set WEB_PUSH_VAPID_PUBLIC_KEY, WEB_PUSH_VAPID_PRIVATE_KEY and WEB_PUSH_VAPID_SUBJECT together, or none of them');
  }
  return { subject, current: { publicKey, privateKey } };
}

/** The settings of the web-pusher's own provider (for apps without VAPID keys of their own). */
export async function webSettings(config: Config): Promise<WebPushSettings> {
  const vapid = processVapid(config);
  const connection = await webConnection({ sandboxStateDir: config.SANDBOX_STATE_DIR, webTrustSandbox: config.WEB_PUSH_TRUST_SANDBOX, proxyUrl: config.WEB_PUSH_PROXY_URL });
  return { ...connection, ...(vapid !== undefined && { vapid }), requestTimeoutMs: config.WEB_PUSH_REQUEST_TIMEOUT_MS };
}
