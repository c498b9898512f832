import { readFile } from 'node:fs/promises';
import type { ConfigOf } from '@herald/config';
import { apnsConnection, connectionDefaults } from '@herald/delivery';
import { loadSandboxSettings, type ApnsSettings } from '@herald/providers';
import type { apnsPusherConfig } from './config.ts';

type Config = ConfigOf<typeof apnsPusherConfig>;

async function authFromEnv(config: Config): Promise<ApnsSettings['auth'] | undefined> {
  if (config.APNS_KEY_FILE !== undefined) {
    if (config.APNS_KEY_ID === undefined || config.APNS_TEAM_ID === undefined) {
      throw new Error('APNS_KEY_FILE needs APNS_KEY_ID and APNS_TEAM_ID');
    }
    const key = await readFile(config.APNS_KEY_FILE, 'utf8');
    return { kind: 'token', key, keyId: config.APNS_KEY_ID, teamId: config.APNS_TEAM_ID };
  }
  if (config.APNS_CERT_FILE !== undefined) {
    if (config.APNS_CERT_KEY_FILE === undefined) throw new Error('APNS_CERT_FILE needs APNS_CERT_KEY_FILE');
    const [cert, key] = await Promise.all([readFile(config.APNS_CERT_FILE, 'utf8'), readFile(config.APNS_CERT_KEY_FILE, 'utf8')]);
    return { kind: 'certificate', cert, key, file: config.APNS_CERT_FILE };
  }
  return undefined;
}

/**
 * Apple credentials from the environment, reached per APNS_ADDRESS / APNS_PORT / APNS_CA_FILE /
 * APNS_PROXY_URL; without credentials, the local APNs sandbox as sandbox.json describes it, or
 * none (undefined) when APNS_APP_CREDENTIALS_ONLY says every app brings its own.
 */
export async function apnsSettings(config: Config): Promise<ApnsSettings | undefined> {
  const auth = await authFromEnv(config);
  if (auth === undefined && config.APNS_APP_CREDENTIALS_ONLY) return undefined;
  if (auth === undefined) return (await loadSandboxSettings(config.SANDBOX_STATE_DIR)).apns;
  const apple = { address: config.APNS_PRODUCTION ? 'api.push.apple.com' : 'api.sandbox.push.apple.com', port: 443 };
  const connection = apnsConnection(apple, connectionDefaults('apns', config));
  return { ...connection, production: config.APNS_PRODUCTION, auth, requestTimeoutMs: config.APNS_REQUEST_TIMEOUT_MS };
}
