import { randomBytes } from 'node:crypto';
import { createAppCredentialStore, createSecretBox } from '@herald/db';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createKey, listApps, rotateApp, updateApp, type AdminDeps } from './admin-service.ts';
import { ApiError } from './api-error.ts';

const KEY = '-----BEGIN PRIVATE KEY-----\nMIGT\n-----END PRIVATE KEY-----\n';
const apns = { auth: 'token', keyPem: KEY, keyId: 'KEY1234567', teamId: 'TEAM123456' };
let t: TestDatabase;
let d: AdminDeps;
let ca: string;

beforeAll(async () => {
  t = await createTestDatabase('admin_conn');
  const store = createAppCredentialStore(t.db.kysely, createSecretBox(randomBytes(32).toString('hex')));
  const unused = () => Promise.reject(new Error('unused'));
  d = { store, list: () => t.db.apps.list(), keys: { create: unused, revoke: unused, createOperator: unused, findOperatorByKey: unused }, audit: t.db.audit, generateVapidKeys: unused };
  ca = (await generate([{ name: 'commonName', value: 'relay CA' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' })).cert;
});
afterAll(() => t?.drop());

/** The ApiError a call was refused with. */
async function refusal(call: Promise<unknown>): Promise<ApiError> {
  const err = await call.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(err)}`);
  return err;
}

describe('admin API: app connection settings', () => {
  it('refuses a bad address, port, CA and proxy with a 400 naming each field, and stores nothing', async () => {
    const body = { id: 'bad', apns, apnsConnection: { address: 'https://relay', port: 0, caPem: 'not a pem', proxyUrl: 'http://u:hunter2@proxy' } };
    const err = await refusal(createApp(body, d));
    expect(err.status).toBe(400);
    expect(err.issues?.map((i) => i.path)).toEqual(['apnsConnection.address', 'apnsConnection.port', 'apnsConnection.caPem', 'apnsConnection.proxyUrl']);
    expect(err.message).not.toContain('hunter2');
    expect(await t.db.apps.get('bad')).toBeUndefined();
  });

  it('refuses connection settings for a platform the app has no credentials for (400 invalid-connection)', async () => {
    const err = await refusal(createApp({ id: 'nocreds', fcmConnection: { proxyUrl: 'http://127.0.0.1:3128' } }, d));
    expect([err.status, err.code]).toEqual([400, 'invalid-connection']);
    expect(err.message).toMatch(/^fcmConnection: the app has no FCM credentials/);
  });

  it('shows the settings without the CA or the proxy URL, and PATCH changes or clears them', async () => {
    const created = await createApp({ id: 'relay', apns, apnsConnection: { address: 'relay.corp.example', caPem: ca, proxyUrl: 'http://u:hunter2@127.0.0.1:3128' } }, d);
    expect(created.apnsConnection).toEqual({ address: 'relay.corp.example', port: null, ca: true, proxy: true });
    expect(created.fcmConnection).toEqual({ host: null, port: null, ca: false, proxy: false });
    expect(JSON.stringify(await listApps(d))).not.toMatch(/hunter2|BEGIN CERTIFICATE/);
    const patched = await updateApp('relay', { apnsConnection: { port: 8443, proxyUrl: null } }, d);
    expect(patched).toMatchObject({ apnsConnection: { address: 'relay.corp.example', port: 8443, ca: true, proxy: false }, credentialsVersion: created.credentialsVersion + 1 });
    const err = await refusal(updateApp('relay', { fcmConnection: { port: 'x' } }, d));
    expect(err.issues?.map((i) => i.path)).toEqual(['fcmConnection.port']);
  });
});

describe('admin API: an app with an APNs certificate', () => {
  it('shows when the certificate expires (ISO 8601), and null for a .p8 signing key', async () => {
    const until = new Date(Date.now() + 200 * 86_400_000);
    until.setUTCMilliseconds(0);
    const made = await generate([{ name: 'commonName', value: 'Apple Push Services: com.example.cert' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256', notAfterDate: until });
    const created = await createApp({ id: 'certified', apns: { auth: 'certificate', certPem: made.cert, keyPem: made.private } }, d);
    expect(created).toMatchObject({ apnsAuth: 'certificate', apnsCertificateExpiresAt: until.toISOString() });
    expect((await listApps(d)).find((a) => a.id === 'relay')).toMatchObject({ apnsAuth: 'token', apnsCertificateExpiresAt: null });
  });

  it('keeps the endpoint of an app whose credentials are rotated without one (a renewed production certificate stays on production)', async () => {
    const made = await generate([{ name: 'commonName', value: 'Apple Push Services: com.example.live' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' });
    const certificate = { auth: 'certificate', certPem: made.cert, keyPem: made.private };
    expect((await createApp({ id: 'live', apns: { ...certificate, endpoint: 'production' } }, d)).apnsEndpoint).toBe('production');
    expect((await rotateApp('live', { apns: certificate }, d)).apnsEndpoint).toBe('production');
    expect((await createApp({ id: 'fresh', apns: certificate }, d)).apnsEndpoint).toBe('development');
  });
});

describe('admin API: team keys', () => {
  // A key for an app not yet added would gain its whole API the day an app takes the id; one for a mistyped id acts for nothing.
  it('issues a key only for apps that exist or "*", and answers 422 naming each unknown app otherwise, issuing nothing', async () => {
    const keys = { ...d, keys: { ...d.keys, create: t.db.apiKeys.create.bind(t.db.apiKeys) } };
    await createApp({ id: 'payments' }, d);
    const err = await refusal(createKey({ team: 'billing', apps: ['payments', 'paymnets', '*', 'ledger'] }, keys));
    expect([err.status, err.code, err.issues]).toEqual([422, 'unknown-app', [expect.objectContaining({ path: 'apps.1' }), expect.objectContaining({ path: 'apps.3' })]]);
    expect((await refusal(createKey({ team: 'billing', apps: ['Payments'] }, keys))).issues?.map((i) => i.path)).toEqual(['apps.0']);
    expect(await t.db.apiKeys.list()).toEqual([]);
    expect(await createKey({ team: 'billing', apps: ['payments'] }, keys)).toMatchObject({ team: 'billing', apps: ['payments'] });
    expect(await createKey({ team: 'ops', apps: ['*'] }, keys)).toMatchObject({ apps: ['*'] });
  });
});
