import { parseProxyUrl, type Platform, type ProviderConnection } from '@herald/contracts';
import type { ApnsSettings, FcmSettings } from '@herald/providers';

type ProxySettings = NonNullable<ApnsSettings['proxy']>;

/** A CA bundle read at start-up: where it came from and its PEM. */
export interface CaFile {
  path: string;
  pem: string;
}

/** The pusher's connection settings from its environment (each pusher has its own platform's). */
export interface ConnectionConfig {
  APNS_ADDRESS?: string | undefined;
  APNS_PORT?: number | undefined;
  APNS_CA_FILE?: CaFile | undefined;
  APNS_PROXY_URL?: string | undefined;
  FCM_HOST?: string | undefined;
  FCM_PORT?: number | undefined;
  FCM_CA_FILE?: CaFile | undefined;
  FCM_PROXY_URL?: string | undefined;
  /** Web Push: endpoints are the subscriptions' own URLs, so only a proxy applies. */
  WEB_PUSH_PROXY_URL?: string | undefined;
}

/** Only the parts that are set. */
function compact(c: { host?: string | undefined; port?: number | undefined; caPem?: string | undefined; proxyUrl?: string | undefined }): ProviderConnection {
  return {
    ...(c.host !== undefined && { host: c.host }),
    ...(c.port !== undefined && { port: c.port }),
    ...(c.caPem !== undefined && { caPem: c.caPem }),
    ...(c.proxyUrl !== undefined && { proxyUrl: c.proxyUrl }),
  };
}

/** The pusher-wide defaults for `platform` (APNS_ADDRESS, APNS_PORT, APNS_CA_FILE, APNS_PROXY_URL or the FCM_ ones). */
export function connectionDefaults(platform: Platform, config: ConnectionConfig): ProviderConnection {
  if (platform === 'web') return compact({ proxyUrl: config.WEB_PUSH_PROXY_URL });
  return platform === 'apns'
    ? compact({ host: config.APNS_ADDRESS, port: config.APNS_PORT, caPem: config.APNS_CA_FILE?.pem, proxyUrl: config.APNS_PROXY_URL })
    : compact({ host: config.FCM_HOST, port: config.FCM_PORT, caPem: config.FCM_CA_FILE?.pem, proxyUrl: config.FCM_PROXY_URL });
}

/** Each part an app sets wins over the pusher's default for that part. */
export function mergeConnection(own: ProviderConnection | undefined, defaults: ProviderConnection): ProviderConnection {
  return compact({
    host: own?.host ?? defaults.host,
    port: own?.port ?? defaults.port,
    caPem: own?.caPem ?? defaults.caPem,
    proxyUrl: own?.proxyUrl ?? defaults.proxyUrl,
  });
}

/**
 * What an app with its own credentials inherits from the pusher: the CA bundle and the proxy, not
 * the host or port. An app's endpoint (production or development) picks Apple's host; a
 * pusher-wide APNS_ADDRESS applied to it would send development tokens to production (or the
 * reverse), which Apple answers with BadDeviceToken, and Herald would invalidate good tokens.
 */
export function appDefaults(defaults: ProviderConnection): ProviderConnection {
  return compact({ caPem: defaults.caPem, proxyUrl: defaults.proxyUrl });
}

/** The proxy of a URL validated where it was given (admin API, CLI, start-up); a bad one here is a bug. */
export function proxyOf(url: string | undefined): ProxySettings | undefined {
  if (url === undefined) return undefined;
  const parsed = parseProxyUrl(url);
  if (!parsed.ok) throw new Error(`proxy URL ${parsed.reason}`);
  return parsed.value;
}

/** APNs: the connection's parts over `base` (Apple's host for the app's endpoint, or the sandbox). */
export function apnsConnection(base: { address: string; port: number; ca?: string }, c: ProviderConnection): Pick<ApnsSettings, 'address' | 'port' | 'ca' | 'proxy'> {
  const ca = c.caPem ?? base.ca;
  const proxy = proxyOf(c.proxyUrl);
  return { address: c.host ?? base.address, port: c.port ?? base.port, ...(ca !== undefined && { ca }), ...(proxy !== undefined && { proxy }) };
}

const GOOGLE = { host: 'fcm.googleapis.com', port: 443 } as const;

/** FCM: the connection's parts over `base` (undefined: Google; or the sandbox); an endpoint only when one part differs. */
export function fcmConnection(base: FcmSettings['endpoint'], c: ProviderConnection): Pick<FcmSettings, 'endpoint' | 'proxy'> {
  const host = c.host ?? base?.host;
  const port = c.port ?? base?.port;
  const ca = c.caPem ?? base?.ca;
  const proxy = proxyOf(c.proxyUrl);
  const redirect = host !== undefined || port !== undefined || ca !== undefined;
  return {
    ...(redirect && { endpoint: { host: host ?? GOOGLE.host, port: port ?? GOOGLE.port, ...(ca !== undefined && { ca }) } }),
    ...(proxy !== undefined && { proxy }),
  };
}
