import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppCredentialStore } from './app-credentials.ts';
import { createSecretBox } from './secret-box.ts';
import { resealAppSecrets } from './secret-reseal.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

const PEM = '-----BEGIN PRIVATE KEY-----\nMIGT\n-----END PRIVATE KEY-----\n';
/** A VAPID pair shaped like web-push's generateVAPIDKeys(). */
function vapidPair(): { publicKey: string; privateKey: string } {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  const publicKey = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]).toString('base64url');
  return { publicKey, privateKey: randomBytes(32).toString('base64url') };
}

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('reseal');
});
afterAll(() => t.drop());

describe('resealAppSecrets (a HERALD_SECRET_KEY rotation)', () => {
  const [oldKey, newKey] = [randomBytes(32).toString('hex'), randomBytes(32).toString('hex')];

  it("seals every app secret again by the first key, leaves the app's version and updated_at, and lists what no key opens", async () => {
    // Everything an app keeps sealed, sealed by the old key.
    const before = createAppCredentialStore(t.db.kysely, createSecretBox(oldKey));
    await before.create({
      id: 'chat',
      enabled: true,
      apns: { auth: 'token', keyPem: PEM, keyId: 'KEY1234567', teamId: 'TEAM123456', endpoint: 'production' },
      fcm: { auth: 'access-token', accessToken: 'ya29.secret', projectId: 'chat-prod', endpoint: 'google' },
    });
    await before.update('chat', { apnsConnection: { proxyUrl: 'http://u:p@127.0.0.1:3128' }, fcmConnection: { proxyUrl: 'http://u:q@127.0.0.1:3129' } });
    const [first, second] = [vapidPair(), vapidPair()];
    await before.generateVapid('chat', { subject: 'mailto:ops@example.com', keys: first });
    await before.rotateVapid('chat', { keys: second });
    await createAppCredentialStore(t.db.kysely, createSecretBox(newKey)).create({ id: 'shop', enabled: true, fcm: { auth: 'access-token', accessToken: 'ya29.shop', projectId: 'shop', endpoint: 'google' } });
    // Sealed by a key the operator no longer has.
    await createAppCredentialStore(t.db.kysely, createSecretBox(randomBytes(32).toString('hex'))).create({ id: 'lost', enabled: true, fcm: { auth: 'access-token', accessToken: 'x', projectId: 'p', endpoint: 'google' } });
    const versions = async () => t.db.kysely.selectFrom('apps').select(['id', 'credentials_version', 'updated_at', 'fcm_secret']).orderBy('id').execute();
    const was = await versions();

    const result = await resealAppSecrets(t.db.kysely, createSecretBox(`${newKey},${oldKey}`));
    expect(result).toEqual({
      apps: 3,
      resealed: 6,
      current: 1,
      changedMeanwhile: 0,
      unopened: [{ app: 'lost', column: 'fcm_secret', reason: expect.stringMatching(/cannot be opened/) }],
    });
    // The new key alone now opens all of chat's secrets, as they were.
    const after = createAppCredentialStore(t.db.kysely, createSecretBox(newKey));
    expect(await after.readApns('chat')).toMatchObject({ keyPem: PEM, connection: { proxyUrl: 'http://u:p@127.0.0.1:3128' } });
    expect(await after.readFcm('chat')).toMatchObject({ accessToken: 'ya29.secret', connection: { proxyUrl: 'http://u:q@127.0.0.1:3129' } });
    expect(await after.readWeb('chat')).toMatchObject({ current: second, previous: first });
    expect(await after.readFcm('shop')).toMatchObject({ accessToken: 'ya29.shop' });
    // Same version and time: pushers keep their providers (the plaintext did not change); what was current or unopened is untouched.
    const now = await versions();
    expect(now.map((r) => [r.id, r.credentials_version, r.updated_at])).toEqual(was.map((r) => [r.id, r.credentials_version, r.updated_at]));
    expect(now.filter((r) => r.id !== 'chat').map((r) => r.fcm_secret)).toEqual(was.filter((r) => r.id !== 'chat').map((r) => r.fcm_secret));

    // Run again: nothing left to reseal.
    expect(await resealAppSecrets(t.db.kysely, createSecretBox(`${newKey},${oldKey}`))).toMatchObject({ resealed: 0, current: 7 });
  });
});
