import { bool, int, optionalStr } from '@herald/config';
import type { DevicePush, Platform } from '@herald/contracts';
import { createAppCredentialStore, createSecretBox, recordWebVapidKey, type Database } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { PushProvider } from '@herald/providers';
import type { Registry } from '@herald/runtime';
import { createAppBans, type AppBans } from './app-ban.ts';
import { appProviderFactory, hasOwnCredentials } from './app-provider.ts';
import { createJobOutcomeRecorder, type JobOutcomeRecorder } from './job-outcomes.ts';
import { processVapid, type ProcessVapidSettings } from './process-vapid.ts';
import { createProviderPool, type ProviderPool } from './provider-pool.ts';
import { connectionDefaults, type ConnectionConfig } from './provider-connection.ts';

/** Pusher settings for apps as data: per-app providers, temporary bans, job status. */
export const appDeliveryConfig = {
  HERALD_SECRET_KEY: optionalStr(
    '32-byte key (64 hex characters or base64) that seals app credentials at rest (AES-256-GCM); during a rotation several, comma-separated: the first seals, each opens (herald apps reseal)',
    { secret: true },
  ),
  PROVIDER_IDLE_MS: int("Close an app's own provider (connection, provider token) after this long without a send", { default: '300000', min: 1000 }),
  APP_REQUEST_TIMEOUT_MS: int('Per-request timeout for providers built from app credentials', { default: '5000', min: 100 }),
  APP_BAN_THRESHOLD: int('Credential or topic failures of one app within APP_BAN_WINDOW_MS that ban it', { default: '20', min: 1 }),
  APP_BAN_WINDOW_MS: int('Window over which an app\'s credential or topic failures are counted', { default: '60000', min: 1000, comparedOnly: true }),
  APP_BAN_COOLDOWN_MS: int("How long a banned app's pushes are parked (code app-banned) before sends are tried again", { default: '300000', min: 1000, comparedOnly: true }),
  JOB_STATUS_ENABLED: bool('Record each push\'s final outcome for the job status the HTTP API reports', { default: 'true' }),
} as const;

/** The connection settings (APNS_ADDRESS, APNS_CA_FILE, FCM_PROXY_URL, ...) are the defaults for apps' own providers. */
export interface AppDeliverySettings extends ConnectionConfig, ProcessVapidSettings {
  HERALD_SECRET_KEY: string | undefined;
  PROVIDER_IDLE_MS: number;
  APP_REQUEST_TIMEOUT_MS: number;
  APP_BAN_THRESHOLD: number;
  APP_BAN_WINDOW_MS: number;
  APP_BAN_COOLDOWN_MS: number;
  JOB_STATUS_ENABLED: boolean;
  SANDBOX_STATE_DIR: string;
  /** Web Push: trust the sandbox's certificate for its origin (the web-pusher's WEB_PUSH_TRUST_SANDBOX). */
  WEB_PUSH_TRUST_SANDBOX?: boolean;
  /** Web Push: non-public addresses push services may resolve to (the web-pusher's WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES). */
  WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES?: readonly string[];
}

export interface AppDelivery {
  providers: ProviderPool;
  bans: AppBans;
  outcomes?: JobOutcomeRecorder;
}

/** Record the key a web push's subscription took on its device, as the push addressed it (web-vapid-store.ts). */
const recordWebKeyIn =
  (db: Database) =>
  (push: DevicePush, publicKey: string): Promise<boolean> =>
    push.webKeys === undefined
      ? Promise.resolve(false)
      : recordWebVapidKey(db.kysely, { deviceId: push.deviceId, endpoint: push.token, keys: push.webKeys, vapidKey: push.webVapidKey }, publicKey);

/** The pusher's per-app parts: a provider pool (falling back to `fallback`), bans and the job-outcome recorder. */
export function createAppDelivery(
  platform: Platform,
  config: AppDeliverySettings,
  db: Database,
  fallback: PushProvider,
  logger: Logger,
  registry: Registry,
  now?: () => Date,
): AppDelivery {
  const box = config.HERALD_SECRET_KEY === undefined ? undefined : createSecretBox(config.HERALD_SECRET_KEY);
  const credentials = createAppCredentialStore(db.kysely, box);
  const providers = createProviderPool({
    platform,
    fallback: () => Promise.resolve(fallback),
    hasOwn: (app) => hasOwnCredentials(platform, app),
    build: appProviderFactory({
      platform,
      credentials,
      sandboxStateDir: config.SANDBOX_STATE_DIR,
      requestTimeoutMs: config.APP_REQUEST_TIMEOUT_MS,
      defaults: connectionDefaults(platform, config),
      ...(config.WEB_PUSH_TRUST_SANDBOX !== undefined && { webTrustSandbox: config.WEB_PUSH_TRUST_SANDBOX }),
      ...(config.WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES !== undefined && { webPrivateAddresses: config.WEB_PUSH_ALLOWED_PRIVATE_ADDRESSES }),
      ...(platform === 'web' && { processVapid: processVapid(config), recordWebKey: recordWebKeyIn(db) }),
      ...(now !== undefined && { now }),
      logger,
    }),
    idleMs: config.PROVIDER_IDLE_MS,
    logger,
  });
  const bans = createAppBans(
    { threshold: config.APP_BAN_THRESHOLD, windowMs: config.APP_BAN_WINDOW_MS, cooldownMs: config.APP_BAN_COOLDOWN_MS },
    logger,
    registry,
  );
  return { providers, bans, ...(config.JOB_STATUS_ENABLED && { outcomes: createJobOutcomeRecorder(db.jobs, logger) }) };
}
