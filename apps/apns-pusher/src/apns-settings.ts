import { readFile } from 'node:fs/promises';
import type { ConfigOf } from '@herald/config';
import { loadSandboxSettings, type ApnsSettings } from '@herald/providers';
import type { apnsPusherConfig } from './config.ts';

type Config = ConfigOf<typeof apnsPusherConfig>;

/** Apple credentials from the environment; without any, the local APNs sandbox. */
export async function apnsSettings(config: Config): Promise<ApnsSettings> {
  const base = { production: config.APNS_PRODUCTION, requestTimeoutMs: config.APNS_REQUEST_TIMEOUT_MS };
  const endpoint = config.APNS_PRODUCTION ? 'api.push.apple.com' : 'api.sandbox.push.apple.com';
  const address = config.APNS_ADDRESS ?? endpoint;
  if (config.APNS_KEY_FILE !== undefined) {
    if (config.APNS_KEY_ID === undefined || config.APNS_TEAM_ID === undefined) {
      throw new Error('APNS_KEY_FILE needs APNS_KEY_ID and APNS_TEAM_ID');
    }
    const key = await readFile(config.APNS_KEY_FILE, 'utf8');
    return { ...base, address, port: config.APNS_PORT, auth: { kind: 'token', key, keyId: config.APNS_KEY_ID, teamId: config.APNS_TEAM_ID } };
  }
  if (config.APNS_CERT_FILE !== undefined) {
    if (config.APNS_CERT_KEY_FILE === undefined) throw new Error('APNS_CERT_FILE needs APNS_CERT_KEY_FILE');
    const [cert, key] = await Promise.all([readFile(config.APNS_CERT_FILE, 'utf8'), readFile(config.APNS_CERT_KEY_FILE, 'utf8')]);
    return { ...base, address, port: config.APNS_PORT, auth: { kind: 'certificate', cert, key } };
  }
  return (await loadSandboxSettings(config.SANDBOX_STATE_DIR)).apns;
}
