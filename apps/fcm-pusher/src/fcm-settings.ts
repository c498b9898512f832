import { readFile } from 'node:fs/promises';
import type { ConfigOf } from '@herald/config';
import { connectionDefaults, fcmConnection } from '@herald/delivery';
import { loadSandboxSettings, type FcmSettings } from '@herald/providers';
import type { fcmPusherConfig } from './config.ts';

type Config = ConfigOf<typeof fcmPusherConfig>;

/**
 * Firebase credentials from the environment, reached per FCM_HOST / FCM_PORT / FCM_CA_FILE /
 * FCM_PROXY_URL; without credentials, the local FCM sandbox as sandbox.json describes it, or none
 * (undefined) when FCM_APP_CREDENTIALS_ONLY says every app brings its own.
 */
export async function fcmSettings(config: Config): Promise<FcmSettings | undefined> {
  if (config.FCM_SERVICE_ACCOUNT_FILE !== undefined) {
    const json = await readFile(config.FCM_SERVICE_ACCOUNT_FILE, 'utf8');
    const projectId = config.FCM_PROJECT_ID ?? (JSON.parse(json) as { project_id?: string }).project_id;
    if (projectId === undefined) throw new Error('FCM_PROJECT_ID is not set and the service-account file has no project_id');
    const connection = fcmConnection(undefined, connectionDefaults('fcm', config));
    return { ...connection, projectId, credential: { kind: 'service-account', json }, requestTimeoutMs: config.FCM_REQUEST_TIMEOUT_MS };
  }
  if (config.FCM_APP_CREDENTIALS_ONLY) return undefined;
  return (await loadSandboxSettings(config.SANDBOX_STATE_DIR)).fcm;
}
