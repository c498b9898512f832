import type { ApnsCredentials, Platform, ProviderConnection } from '@herald/contracts';
import type { AppCredentialStore, AppRow, StoredApnsCredentials, StoredFcmCredentials } from '@herald/db';
import type { Logger } from '@herald/logging';
import {
  createApnsProvider,
  createFcmProvider,
  createWebPushProvider,
  loadSandboxSettings,
  loadSandboxWebTrust,
  type ApnsSettings,
  type FcmSettings,
  type PushProvider,
  type VapidCredentials,
  type WebPushSettings,
} from '@herald/providers';
import { apnsConnection, appDefaults, fcmConnection, mergeConnection, proxyOf } from './provider-connection.ts';

// The pushers' process-level providers resolve their connection the same way.
export { apnsConnection, fcmConnection, connectionDefaults, mergeConnection, type CaFile, type ConnectionConfig } from './provider-connection.ts';

export interface AppProviderOptions {
  platform: Platform;
  credentials: Pick<AppCredentialStore, 'readApns' | 'readFcm' | 'readWeb'>;
  /** Where the local sandbox's sandbox.json is (for apps whose endpoint is "local"). */
  sandboxStateDir: string;
  requestTimeoutMs: number;
  /**
   * The pusher's connection settings; apps that reach Apple or Google inherit its CA and proxy
   * (never its host or port: appDefaults), and their own settings win part by part. A "local" (sandbox) app uses sandbox.json and its own settings only.
   */
  defaults?: ProviderConnection;
  /** Web Push: trust the local sandbox's certificate for the sandbox's own origin (default true). */
  webTrustSandbox?: boolean;
  /** Web Push: the non-public addresses and ranges push services may resolve to (WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES). */
  webPrivateAddresses?: readonly string[];
  /** Web Push: the web-pusher's own pair (WEB_PUSH_VAPID_*), still signing the subscriptions an app had before it got keys of its own. */
  processVapid?: VapidCredentials | undefined;
  /** Web Push: record on a device the VAPID key its subscription was found to take (WebPushSettings.recordKey). */
  recordWebKey?: WebPushSettings['recordKey'];
  /** The clock FCM's and Web Push's time to live count by, and APNs client certificates' dates are judged by (ProviderLimits.now); the host's when unset. */
  now?: () => Date;
  logger: Logger;
}

const APPLE_HOSTS = { production: 'api.push.apple.com', development: 'api.sandbox.push.apple.com' } as const;

function apnsAuth(c: ApnsCredentials): ApnsSettings['auth'] {
  return c.auth === 'token'
    ? { kind: 'token', key: c.keyPem, keyId: c.keyId, teamId: c.teamId }
    : { kind: 'certificate', cert: c.certPem, key: c.keyPem, ...(c.passphrase !== undefined && { passphrase: c.passphrase }) };
}

async function apnsSettingsFor(c: StoredApnsCredentials, o: AppProviderOptions): Promise<ApnsSettings> {
  const auth = apnsAuth(c);
  if (c.endpoint === 'local') {
    const sandbox = (await loadSandboxSettings(o.sandboxStateDir)).apns;
    return { ...sandbox, ...apnsConnection(sandbox, c.connection ?? {}), auth, requestTimeoutMs: o.requestTimeoutMs };
  }
  const connection = apnsConnection({ address: APPLE_HOSTS[c.endpoint], port: 443 }, mergeConnection(c.connection, appDefaults(o.defaults ?? {})));
  return { ...connection, production: c.endpoint === 'production', auth, requestTimeoutMs: o.requestTimeoutMs };
}

async function fcmSettingsFor(c: StoredFcmCredentials, o: AppProviderOptions): Promise<FcmSettings> {
  const credential: FcmSettings['credential'] =
    c.auth === 'access-token' ? { kind: 'access-token', accessToken: c.accessToken } : { kind: 'service-account', json: c.serviceAccountJson };
  const projectId = c.projectId ?? '';
  if (c.endpoint === 'local') {
    const sandbox = (await loadSandboxSettings(o.sandboxStateDir)).fcm;
    return { ...sandbox, ...fcmConnection(sandbox.endpoint, c.connection ?? {}), projectId, credential, requestTimeoutMs: o.requestTimeoutMs };
  }
  return { ...fcmConnection(undefined, mergeConnection(c.connection, appDefaults(o.defaults ?? {}))), projectId, credential, requestTimeoutMs: o.requestTimeoutMs };
}

/**
 * How a web pusher reaches push services (for its own keys and for every app's): Node's roots,
 * plus the sandbox's CA for the sandbox's origin unless turned off, through the proxy if any; at
 * public addresses only, but for the sandbox's origin and the ranges the operator allowed.
 */
export async function webConnection(o: {
  sandboxStateDir: string;
  webTrustSandbox?: boolean;
  webPrivateAddresses?: readonly string[];
  proxyUrl?: string | undefined;
}): Promise<Pick<WebPushSettings, 'trusted' | 'proxy' | 'privateAddresses'>> {
  const trusted = o.webTrustSandbox === false ? [] : await loadSandboxWebTrust(o.sandboxStateDir);
  const proxy = proxyOf(o.proxyUrl);
  return { trusted, ...(proxy !== undefined && { proxy }), ...(o.webPrivateAddresses !== undefined && { privateAddresses: o.webPrivateAddresses }) };
}

/** Whether the app has its own credentials for this platform (for Web Push: its own VAPID keys). */
export const hasOwnCredentials = (platform: Platform, app: AppRow): boolean => {
  if (platform === 'web') return app.webVapid === true;
  return (platform === 'apns' ? app.apnsAuth : app.fcmAuth) != null;
};

/** Build a provider from an app's stored credentials (decrypted only here, never cached elsewhere). */
export function appProviderFactory(o: AppProviderOptions): (app: AppRow) => Promise<PushProvider> {
  const logger = (app: string) => o.logger.child({ app });
  return async (app) => {
    if (o.platform === 'apns') {
      const c = await o.credentials.readApns(app.id);
      if (c === undefined) throw new Error(`app "${app.id}" has no APNs credentials`);
      return createApnsProvider(await apnsSettingsFor(c, o), logger(app.id), nowMs(o.now));
    }
    if (o.platform === 'web') {
      const vapid = await o.credentials.readWeb(app.id);
      if (vapid === undefined) throw new Error(`app "${app.id}" has no VAPID keys`);
      const connection = await webConnection({ ...o, proxyUrl: o.defaults?.proxyUrl });
      const before = o.processVapid === undefined ? {} : { processVapid: o.processVapid };
      const recordKey = o.recordWebKey === undefined ? {} : { recordKey: o.recordWebKey };
      return createWebPushProvider({ ...connection, vapid, ...before, ...recordKey, requestTimeoutMs: o.requestTimeoutMs }, logger(app.id), nowMs(o.now));
    }
    const c = await o.credentials.readFcm(app.id);
    if (c === undefined) throw new Error(`app "${app.id}" has no FCM credentials`);
    return createFcmProvider(await fcmSettingsFor(c, o), logger(app.id), o.now);
  };
}

/** A Date clock as the milliseconds one Web Push's provider takes. */
export const nowMs = (now: (() => Date) | undefined): (() => number) => (now === undefined ? Date.now : () => now().getTime());
