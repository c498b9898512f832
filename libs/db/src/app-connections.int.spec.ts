import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppAdminError, createAppCredentialStore } from './app-credentials.ts';
import { createAppRepository } from './app-repository.ts';
import { createSecretBox } from './secret-box.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

const KEY = '-----BEGIN PRIVATE KEY-----\nMIGT\n-----END PRIVATE KEY-----\n';
// The CA is stored as given; only the API, CLI and pushers check that it parses.
const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const PROXY = 'http://herald:hunter2@proxy.corp.example:3128';
const apnsCreds = { auth: 'token', keyPem: KEY, keyId: 'KEY1234567', teamId: 'TEAM123456', endpoint: 'production' } as const;
const fcmCreds = { auth: 'access-token', accessToken: 'ya29.secret', projectId: 'chat-prod', endpoint: 'google' } as const;

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('conns');
});
afterAll(() => t.drop());

describe('app connection settings', () => {
  const box = createSecretBox(randomBytes(32).toString('hex'));

  it('round-trip with the credentials: endpoint and CA in plain columns, the proxy URL sealed', async () => {
    const store = createAppCredentialStore(t.db.kysely, box);
    const created = await store.create({
      id: 'chat',
      enabled: true,
      apns: apnsCreds,
      fcm: fcmCreds,
      apnsConnection: { address: 'relay.corp.example', port: 8443, caPem: CA, proxyUrl: PROXY },
      fcmConnection: { proxyUrl: PROXY },
    });
    expect(created).toMatchObject({
      credentialsVersion: 1,
      apnsConnection: { host: 'relay.corp.example', port: 8443, ca: true, proxy: true },
      fcmConnection: { host: null, port: null, ca: false, proxy: true },
    });
    const raw = await t.db.kysely.selectFrom('apps').select(['apns_ca_pem', 'apns_proxy_secret', 'fcm_proxy_secret']).where('id', '=', 'chat').executeTakeFirstOrThrow();
    expect(raw.apns_ca_pem).toBe(CA);
    expect(`${raw.apns_proxy_secret}${raw.fcm_proxy_secret}`).not.toMatch(/hunter2|proxy\.corp/);
    expect(await store.readApns('chat')).toEqual({ ...apnsCreds, connection: { host: 'relay.corp.example', port: 8443, caPem: CA, proxyUrl: PROXY } });
    expect(await store.readFcm('chat')).toEqual({ ...fcmCreds, connection: { proxyUrl: PROXY } });
  });

  it('change part by part (null clears), each change moving credentials_version; a topic change does not', async () => {
    const store = createAppCredentialStore(t.db.kysely, box);
    expect((await store.update('chat', { apnsTopic: 'com.example.chat' })).credentialsVersion).toBe(1);
    const cleared = await store.update('chat', { apnsConnection: { proxyUrl: null, port: 2197 } });
    expect(cleared).toMatchObject({ credentialsVersion: 2, apnsConnection: { host: 'relay.corp.example', port: 2197, ca: true, proxy: false } });
    expect((await store.readApns('chat'))?.connection).toEqual({ host: 'relay.corp.example', port: 2197, caPem: CA });
    const none = await store.update('chat', { apnsConnection: null, fcmConnection: null });
    expect(none).toMatchObject({ credentialsVersion: 3, apnsConnection: { host: null, port: null, ca: false, proxy: false } });
    expect(await store.readApns('chat')).toEqual(apnsCreds);
    expect(await store.readFcm('chat')).toEqual(fcmCreds);
    expect((await createAppRepository(t.db.kysely).list()).find((a) => a.id === 'chat')?.fcmConnection).toEqual({ host: null, port: null, ca: false, proxy: false });
  });

  it('need the app\'s own credentials for that platform, and HERALD_SECRET_KEY for a proxy', async () => {
    const store = createAppCredentialStore(t.db.kysely, box);
    await expect(store.create({ id: 'plain', enabled: true, apnsConnection: { port: 443 } })).rejects.toThrow(/apnsConnection: the app has no APNs credentials/);
    await store.create({ id: 'plain', enabled: true, apns: apnsCreds });
    const refused = store.update('plain', { fcmConnection: { proxyUrl: PROXY } });
    await expect(refused).rejects.toBeInstanceOf(AppAdminError);
    await expect(refused).rejects.toMatchObject({ code: 'invalid-connection', message: expect.stringMatching(/^fcmConnection:/) });
    await expect(store.update('nope', { apnsConnection: { port: 443 } })).rejects.toMatchObject({ code: 'unknown-app' });
    await expect(createAppCredentialStore(t.db.kysely, undefined).update('plain', { apnsConnection: { proxyUrl: PROXY } })).rejects.toThrow(/HERALD_SECRET_KEY/);
    // The database refuses it too, whoever writes.
    await expect(t.db.kysely.updateTable('apps').set({ fcm_port: 443 }).where('id', '=', 'plain').execute()).rejects.toThrow(/apps_fcm_connection_needs_credentials/);
  });

  it('cannot open a sealed proxy URL moved to another app or read with another key', async () => {
    const store = createAppCredentialStore(t.db.kysely, box);
    await store.update('plain', { apnsConnection: { proxyUrl: PROXY } });
    const { apns_proxy_secret } = await t.db.kysely.selectFrom('apps').select('apns_proxy_secret').where('id', '=', 'plain').executeTakeFirstOrThrow();
    await store.create({ id: 'other', enabled: true, apns: apnsCreds });
    await t.db.kysely.updateTable('apps').set({ apns_proxy_secret }).where('id', '=', 'other').execute();
    await expect(store.readApns('other')).rejects.toThrow(/app "other" apns proxy URL/);
    const otherKey = createAppCredentialStore(t.db.kysely, createSecretBox(randomBytes(32).toString('hex')));
    await expect(otherKey.readApns('plain')).rejects.toThrow(/cannot be opened/);
  });
});
