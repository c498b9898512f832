import { randomBytes } from 'node:crypto';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppAdminError, createAppCredentialStore } from './app-credentials.ts';
import { createSecretBox } from './secret-box.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

const PEM = '-----BEGIN PRIVATE KEY-----\nMIGT\n-----END PRIVATE KEY-----\n';
let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('creds');
});
afterAll(() => t.drop());

describe('app credentials', () => {
  const box = createSecretBox(randomBytes(32).toString('hex'));

  it('stores secrets sealed, reads them back, and bumps the version on rotation', async () => {
    const store = createAppCredentialStore(t.db.kysely, box);
    const created = await store.create({
      id: 'chat',
      apnsTopic: 'com.example.chat',
      enabled: true,
      apns: { auth: 'token', keyPem: PEM, keyId: 'KEY1234567', teamId: 'TEAM123456', endpoint: 'production' },
      fcm: { auth: 'access-token', accessToken: 'ya29.secret', projectId: 'chat-prod', endpoint: 'google' },
    });
    expect(created).toMatchObject({ apnsAuth: 'token', fcmAuth: 'access-token', fcmProjectId: 'chat-prod', credentialsVersion: 1 });
    const raw = await t.db.kysely.selectFrom('apps').select(['apns_secret', 'fcm_secret']).where('id', '=', 'chat').executeTakeFirstOrThrow();
    expect(`${raw.apns_secret}${raw.fcm_secret}`).not.toMatch(/PRIVATE|ya29/);
    expect(await store.readApns('chat')).toEqual({ auth: 'token', keyPem: PEM, keyId: 'KEY1234567', teamId: 'TEAM123456', endpoint: 'production' });
    const rotated = await store.rotate('chat', { fcm: { auth: 'access-token', accessToken: 'ya29.next', projectId: 'chat-prod', endpoint: 'local' } });
    expect(rotated.credentialsVersion).toBe(2);
    expect(await store.readFcm('chat')).toEqual({ auth: 'access-token', accessToken: 'ya29.next', projectId: 'chat-prod', endpoint: 'local' });
    expect((await store.update('chat', { enabled: false })).enabled).toBe(false);
  });

  it('cannot read secrets with another key, and refuses unknown or duplicate apps', async () => {
    const other = createAppCredentialStore(t.db.kysely, createSecretBox(randomBytes(32).toString('hex')));
    await expect(other.readApns('chat')).rejects.toThrow(/cannot be opened/);
    await expect(other.rotate('nope', { fcm: { auth: 'access-token', accessToken: 'x', projectId: 'p', endpoint: 'google' } })).rejects.toBeInstanceOf(AppAdminError);
    await expect(createAppCredentialStore(t.db.kysely, box).create({ id: 'chat', enabled: true })).rejects.toThrow(/already exists/);
    await expect(createAppCredentialStore(t.db.kysely, undefined).create({ id: 'nokey', enabled: true, fcm: { auth: 'access-token', accessToken: 'x', projectId: 'p', endpoint: 'google' } })).rejects.toThrow(/HERALD_SECRET_KEY/);
    expect(await createAppCredentialStore(t.db.kysely, box).readApns('nokey')).toBeUndefined();
  });

  it("keeps when an APNs client certificate expires, in the clear: set on create and rotate, filled in on a pusher's first read of one stored before, listed for enabled apps", async () => {
    const store = createAppCredentialStore(t.db.kysely, box);
    const until = new Date('2027-03-01T12:00:00.000Z');
    const made = await generate([{ name: 'commonName', value: 'Apple Push Services: com.example.shop' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256', notBeforeDate: new Date('2026-03-01T12:00:00Z'), notAfterDate: until });
    const certificate = { auth: 'certificate' as const, certPem: made.cert, keyPem: made.private, endpoint: 'production' as const };
    expect((await store.create({ id: 'shop', enabled: true, apns: certificate })).apnsCertificateExpiresAt).toEqual(until);
    await store.create({ id: 'shop-off', enabled: false, apns: certificate });
    await store.create({ id: 'shop-token', enabled: true, apns: { auth: 'token', keyPem: PEM, keyId: 'KEY1234567', teamId: 'TEAM123456', endpoint: 'production' } });
    expect(await t.db.apps.apnsCertificates()).toEqual([{ app: 'shop', expiresAt: until }]);

    // A certificate sealed before 0039 has no expiry until a pusher first opens it.
    await t.db.kysely.updateTable('apps').set({ apns_certificate_expires_at: null }).where('id', '=', 'shop').execute();
    expect(await t.db.apps.apnsCertificates()).toEqual([]);
    await store.readApns('shop');
    expect(await t.db.apps.apnsCertificates()).toEqual([{ app: 'shop', expiresAt: until }]);

    // A rotation without an endpoint keeps the app's: a renewed production certificate stays on production.
    const renewed = await store.rotate('shop', { apns: { auth: 'certificate', certPem: made.cert, keyPem: made.private } });
    expect(renewed).toMatchObject({ apnsEndpoint: 'production', apnsCertificateExpiresAt: until });
    expect((await store.rotate('shop', { apns: { auth: 'token', keyPem: PEM, keyId: 'KEY1234567', teamId: 'TEAM123456', endpoint: 'development' } })).apnsEndpoint).toBe('development');
    expect((await store.rotate('shop', { apns: { auth: 'token', keyPem: PEM, keyId: 'KEY1234567', teamId: 'TEAM123456', endpoint: 'production' } })).apnsCertificateExpiresAt).toBeNull();
    expect(await t.db.apps.apnsCertificates()).toEqual([]);
  });
});
