import type { ConfigOf } from '@herald/config';
import { processVapid, webConnection } from '@herald/delivery';
import type { WebPushSettings } from '@herald/providers';
import type { webPusherConfig } from './config.ts';

type Config = ConfigOf<typeof webPusherConfig>;

/**
 * The settings of the web-pusher's own provider (for apps without VAPID keys of their own): it signs
 * with the process pair only, so a push service refusing that pair's JWT is not held against an app.
 */
export async function webSettings(config: Config): Promise<WebPushSettings> {
  const vapid = processVapid(config);
  const connection = await webConnection({
    sandboxStateDir: config.SANDBOX_STATE_DIR,
    webTrustSandbox: config.WEB_PUSH_TRUST_SANDBOX,
    webPrivateAddresses: config.WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES,
    proxyUrl: config.WEB_PUSH_PROXY_URL,
  });
  return { ...connection, ...(vapid !== undefined && { processVapid: vapid }), requestTimeoutMs: config.WEB_PUSH_REQUEST_TIMEOUT_MS };
}
