import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@herald/logging';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { createAppCredentialStore } from '@herald/db';
import { createRegistrarHandler } from './registrar.ts';

const logger = createLogger({ service: 'registrar-web-test', level: 'silent' });
let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase('registrar_web');
  await t.db.apps.upsert({ id: 'site' });
  await t.db.apps.upsert({ id: 'lab' });
  await createAppCredentialStore(t.db.kysely, undefined).updateWebPush('lab', { hosts: ['127.0.0.1'] });
});
afterAll(() => t.drop());

function keys() {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  const p256dh = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]).toString('base64url');
  return { p256dh, auth: randomBytes(16).toString('base64url') };
}
const message = (body: unknown) => ({ body: Buffer.from(JSON.stringify(body)), headers: {}, routingKey: 'push.registrations', redelivered: false, attempt: 1, queue: 'push.registrations' });
const web = (app: string, token: string, extra: Record<string, unknown> = {}) => ({ kind: 'register', app, platform: 'web', token, userId: 'u1', keys: keys(), eventAt: '2025-03-01T10:00:00Z', ...extra });
const row = (token: string) => t.db.kysely.selectFrom('devices').selectAll().where('token', '=', token).executeTakeFirst();

describe('registrar: browser subscriptions', () => {
  it('applies a subscription on an allowed push service with its keys; parks one on another host, naming it, and one without keys', async () => {
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger });
    const good = web('site', 'https://updates.push.services.mozilla.com/wpush/v2/abc');
    const outcomes = await handle([
      message(good),
      message(web('site', 'https://push.evil.example/x')),
      message(web('lab', 'https://127.0.0.1:4443/wp/1')),
      message(web('lab', 'https://fcm.googleapis.com/fcm/send/x')),
      message({ ...web('site', 'https://fcm.googleapis.com/fcm/send/nokeys'), keys: undefined }),
      message(web('site', 'http://fcm.googleapis.com/fcm/send/plain')),
    ]);
    expect(outcomes[0]).toEqual({ kind: 'ack' });
    expect(outcomes[1]).toEqual({
      kind: 'park',
      code: 'push-service-not-allowed',
      reason: expect.stringMatching(/^token: the push service host "push.evil.example" is not on the app's allow-list \(fcm.googleapis.com, /) as unknown,
    });
    expect(outcomes[2]).toEqual({ kind: 'ack' });
    expect(outcomes[3]).toMatchObject({ kind: 'park', code: 'push-service-not-allowed', reason: expect.stringContaining('(127.0.0.1)') as unknown });
    expect(outcomes[4]).toMatchObject({ kind: 'park', code: 'schema', reason: expect.stringMatching(/keys: a web registration carries the subscription keys/) as unknown });
    expect(outcomes[5]).toMatchObject({ kind: 'park', code: 'schema', reason: expect.stringMatching(/token: not a Web Push endpoint: expected an https URL, got http/) as unknown });
    expect(await row(good.token)).toMatchObject({ platform: 'web', web_p256dh: good.keys.p256dh, web_auth: good.keys.auth, invalidated_at: null });
    expect(await row('https://push.evil.example/x')).toBeUndefined();
    expect(await row('https://127.0.0.1:4443/wp/1')).toMatchObject({ app: 'lab', platform: 'web' });
  });

  it('unregisters a subscription by its endpoint', async () => {
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger });
    const token = 'https://fcm.googleapis.com/fcm/send/bye';
    await handle([message(web('site', token))]);
    expect(await handle([message({ kind: 'unregister', app: 'site', platform: 'web', token, eventAt: '2025-03-02T10:00:00Z' })])).toEqual([{ kind: 'ack' }]);
    expect(await row(token)).toMatchObject({ invalidation_reason: 'unregistered' });
  });
});
