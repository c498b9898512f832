import type { ApnsCredentials, FcmCredentials, Platform } from '@herald/contracts';
import type { AppCredentialStore, AppRow } from '@herald/db';
import type { Logger } from '@herald/logging';
import { createApnsProvider, createFcmProvider, loadSandboxSettings, type ApnsSettings, type FcmSettings, type PushProvider } from '@herald/providers';

export interface AppProviderOptions {
  platform: Platform;
  credentials: Pick<AppCredentialStore, 'readApns' | 'readFcm'>;
  /** Where the local sandbox's sandbox.json is (for apps whose endpoint is "local"). */
  sandboxStateDir: string;
  requestTimeoutMs: number;
  logger: Logger;
}

const APPLE_HOSTS = { production: 'api.push.apple.com', development: 'api.sandbox.push.apple.com' } as const;

function apnsAuth(c: ApnsCredentials): ApnsSettings['auth'] {
  return c.auth === 'token'
    ? { kind: 'token', key: c.keyPem, keyId: c.keyId, teamId: c.teamId }
    : { kind: 'certificate', cert: c.certPem, key: c.keyPem, ...(c.passphrase !== undefined && { passphrase: c.passphrase }) };
}

async function apnsSettingsFor(c: ApnsCredentials, o: AppProviderOptions): Promise<ApnsSettings> {
  const auth = apnsAuth(c);
  if (c.endpoint === 'local') {
    const sandbox = (await loadSandboxSettings(o.sandboxStateDir)).apns;
    return { ...sandbox, auth, requestTimeoutMs: o.requestTimeoutMs };
  }
  return { address: APPLE_HOSTS[c.endpoint], port: 443, production: c.endpoint === 'production', auth, requestTimeoutMs: o.requestTimeoutMs };
}

async function fcmSettingsFor(c: FcmCredentials, o: AppProviderOptions): Promise<FcmSettings> {
  const credential: FcmSettings['credential'] =
    c.auth === 'access-token' ? { kind: 'access-token', accessToken: c.accessToken } : { kind: 'service-account', json: c.serviceAccountJson };
  const projectId = c.projectId ?? '';
  if (c.endpoint === 'local') {
    const sandbox = (await loadSandboxSettings(o.sandboxStateDir)).fcm;
    return { ...sandbox, projectId, credential, requestTimeoutMs: o.requestTimeoutMs };
  }
  return { projectId, credential, requestTimeoutMs: o.requestTimeoutMs };
}

/** Whether the app has its own credentials for this platform. */
export const hasOwnCredentials = (platform: Platform, app: AppRow): boolean => (platform === 'apns' ? app.apnsAuth : app.fcmAuth) != null;

/** Build a provider from an app's stored credentials (decrypted only here, never cached elsewhere). */
export function appProviderFactory(o: AppProviderOptions): (app: AppRow) => Promise<PushProvider> {
  const logger = (app: string) => o.logger.child({ app });
  return async (app) => {
    if (o.platform === 'apns') {
      const c = await o.credentials.readApns(app.id);
      if (c === undefined) throw new Error(`app "${app.id}" has no APNs credentials`);
      return createApnsProvider(await apnsSettingsFor(c, o), logger(app.id));
    }
    const c = await o.credentials.readFcm(app.id);
    if (c === undefined) throw new Error(`app "${app.id}" has no FCM credentials`);
    return createFcmProvider(await fcmSettingsFor(c, o), logger(app.id));
  };
}
