import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '@herald/config';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fcmPusherConfig } from './config.ts';
import { fcmSettings } from './fcm-settings.ts';

let dir: string;
let caFile: string;
let accountFile: string;
let ca: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-fcm-settings-'));
  ca = (await generate([{ name: 'commonName', value: 'spec CA' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' })).cert;
  caFile = join(dir, 'ca.pem');
  accountFile = join(dir, 'account.json');
  await writeFile(caFile, ca);
  await writeFile(accountFile, JSON.stringify({ project_id: 'chat-prod', client_email: 'x@chat-prod.iam.gserviceaccount.com', private_key: 'k' }));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('fcm-pusher connection settings', () => {
  it('reports every bad endpoint, CA and proxy variable at once, by name', () => {
    let problems: readonly string[] = [];
    try {
      loadConfig(fcmPusherConfig, { FCM_HOST: 'fcm.googleapis.com:443', FCM_PORT: 'https', FCM_CA_FILE: join(dir, 'missing.pem'), FCM_PROXY_URL: 'https://proxy:3128' });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems = err.problems;
    }
    expect(problems).toEqual([
      expect.stringMatching(/^FCM_HOST must be a host name or an IP address/),
      expect.stringMatching(/^FCM_PORT must be a port from 1 to 65535, got "https"/),
      expect.stringMatching(/^FCM_CA_FILE cannot be read/),
      expect.stringMatching(/^FCM_PROXY_URL must use http:\/\//),
    ]);
  });

  it('sends with a service account through FCM_HOST, FCM_PORT, FCM_CA_FILE and FCM_PROXY_URL', async () => {
    const base = { FCM_SERVICE_ACCOUNT_FILE: accountFile };
    expect(await fcmSettings(loadConfig(fcmPusherConfig, base))).not.toHaveProperty('endpoint');
    const proxied = await fcmSettings(loadConfig(fcmPusherConfig, { ...base, FCM_PROXY_URL: 'http://127.0.0.1:3128', FCM_CA_FILE: caFile }));
    expect(proxied).toMatchObject({ projectId: 'chat-prod', endpoint: { host: 'fcm.googleapis.com', port: 443, ca }, proxy: { host: '127.0.0.1', port: 3128 } });
    const relay = await fcmSettings(loadConfig(fcmPusherConfig, { ...base, FCM_HOST: 'fcm-relay.corp.example', FCM_PORT: '8443' }));
    expect(relay?.endpoint).toEqual({ host: 'fcm-relay.corp.example', port: 8443 });
  });

  it('without a service account: none with FCM_APP_CREDENTIALS_ONLY (every app brings its own), else the local sandbox', async () => {
    expect(await fcmSettings(loadConfig(fcmPusherConfig, { FCM_APP_CREDENTIALS_ONLY: 'true', SANDBOX_STATE_DIR: '/nonexistent' }))).toBeUndefined();
    await expect(fcmSettings(loadConfig(fcmPusherConfig, { SANDBOX_STATE_DIR: '/nonexistent' }))).rejects.toThrow(/sandbox\.json/);
    expect(await fcmSettings(loadConfig(fcmPusherConfig, { FCM_APP_CREDENTIALS_ONLY: 'true', FCM_SERVICE_ACCOUNT_FILE: accountFile }))).toMatchObject({ projectId: 'chat-prod' });
  });
});
