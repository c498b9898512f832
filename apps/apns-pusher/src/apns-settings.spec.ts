import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configProblems, loadConfig } from '@herald/config';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUncredentialedProvider } from '@herald/providers';
import { apnsSettings } from './apns-settings.ts';
import { apnsPusherConfig } from './config.ts';

let dir: string;
let caFile: string;
let keyFile: string;
let ca: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-apns-settings-'));
  ca = (await generate([{ name: 'commonName', value: 'spec CA' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' })).cert;
  caFile = join(dir, 'ca.pem');
  keyFile = join(dir, 'key.p8');
  await writeFile(caFile, ca);
  await writeFile(keyFile, '-----BEGIN PRIVATE KEY-----\nMIGT\n-----END PRIVATE KEY-----\n');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const problems = (env: Record<string, string>): readonly string[] => configProblems(apnsPusherConfig, env);

describe('apns-pusher connection settings', () => {
  it('reports every bad endpoint, CA and proxy variable at once, by name, without echoing the proxy password', async () => {
    const notPem = join(dir, 'not-a-ca.pem');
    await writeFile(notPem, 'hello');
    const found = problems({ APNS_ADDRESS: 'https://relay', APNS_PORT: '0', APNS_CA_FILE: notPem, APNS_PROXY_URL: 'http://user:hunter2@proxy' });
    expect(found).toEqual([
      expect.stringMatching(/^APNS_ADDRESS must be a host name or an IP address/),
      expect.stringMatching(/^APNS_PORT must be at least 1/),
      expect.stringMatching(/^APNS_CA_FILE .*not-a-ca\.pem: must be PEM certificates/),
      expect.stringMatching(/^APNS_PROXY_URL must name the port/),
    ]);
    expect(found.join('\n')).not.toContain('hunter2');
    expect(problems({ APNS_CA_FILE: join(dir, 'missing.pem') })).toEqual([expect.stringMatching(/^APNS_CA_FILE cannot be read: ENOENT/)]);
  });

  it('sends with environment credentials through APNS_ADDRESS, APNS_CA_FILE and APNS_PROXY_URL', async () => {
    const env = { APNS_KEY_FILE: keyFile, APNS_KEY_ID: 'KEY1234567', APNS_TEAM_ID: 'TEAM123456', APNS_CA_FILE: caFile, APNS_PROXY_URL: 'http://u:p@127.0.0.1:3128' };
    const settings = await apnsSettings(loadConfig(apnsPusherConfig, env));
    expect(settings).toMatchObject({ address: 'api.sandbox.push.apple.com', port: 443, ca, proxy: { host: '127.0.0.1', port: 3128, username: 'u', password: 'p' } });
    const production = await apnsSettings(loadConfig(apnsPusherConfig, { ...env, APNS_PRODUCTION: 'true', APNS_ADDRESS: 'relay.corp.example', APNS_PORT: '8443' }));
    expect(production).toMatchObject({ address: 'relay.corp.example', port: 8443, production: true });
    const plain = await apnsSettings(loadConfig(apnsPusherConfig, { APNS_KEY_FILE: keyFile, APNS_KEY_ID: 'KEY1234567', APNS_TEAM_ID: 'TEAM123456', APNS_PRODUCTION: 'true' }));
    expect(plain?.address).toBe('api.push.apple.com');
    expect(plain?.ca).toBeUndefined();
    expect(plain?.proxy).toBeUndefined();
  });

  it('without credentials: none with APNS_APP_CREDENTIALS_ONLY (every app brings its own), else the local sandbox (refused without its sandbox.json)', async () => {
    // Before, a pusher with no APNS_* and no sandbox (a Kubernetes deployment of apps with their own credentials) could not start.
    const empty = join(dir, 'no-sandbox');
    expect(await apnsSettings(loadConfig(apnsPusherConfig, { APNS_APP_CREDENTIALS_ONLY: 'true', SANDBOX_STATE_DIR: empty }))).toBeUndefined();
    await expect(apnsSettings(loadConfig(apnsPusherConfig, { SANDBOX_STATE_DIR: empty }))).rejects.toThrow(/sandbox\.json/);
    // Credentials given win over the flag.
    const both = await apnsSettings(loadConfig(apnsPusherConfig, { APNS_APP_CREDENTIALS_ONLY: 'true', APNS_KEY_FILE: keyFile, APNS_KEY_ID: 'KEY1234567', APNS_TEAM_ID: 'TEAM123456' }));
    expect(both?.auth).toMatchObject({ kind: 'token', keyId: 'KEY1234567' });
    const provider = createUncredentialedProvider('apns', 'APNS_KEY_FILE …');
    expect(await provider.send({ app: 'shop' } as never, {})).toEqual({ kind: 'permanent', reason: 'no-credentials: app "shop" has no APNs credentials of its own and this pusher has none (APNS_KEY_FILE …)', notSent: true });
  });
});
