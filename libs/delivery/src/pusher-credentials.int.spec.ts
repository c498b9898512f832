import { randomUUID } from 'node:crypto';
import type { DevicePush } from '@herald/contracts';
import { createAppCredentialStore, createDatabase, createSecretBox, type Database, type SecretBox } from '@herald/db';
import { createLogger } from '@herald/logging';
import type { InboundMessage } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppBans } from './app-ban.ts';
import { appProviderFactory } from './app-provider.ts';
import { createProviderPool } from './provider-pool.ts';
import { createPusherHandler } from './pusher.ts';
import { createPusherMetrics } from './pusher-metrics.ts';

const logger = createLogger({ service: 'pusher-credentials-spec', level: 'silent', format: 'json' });
const box = createSecretBox('11'.repeat(32));

let t: TestDatabase;
/** The same schema, on a port where no PostgreSQL listens: every read of it fails to connect. */
let unreachable: Database;
beforeAll(async () => {
  t = await createTestDatabase('pushercreds');
  unreachable = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/test', schema: t.schema, poolSize: 1 });
});
afterAll(async () => {
  await unreachable.close();
  await t.drop();
});

function message(app = 'own-keys'): { push: DevicePush; inbound: InboundMessage } {
  const push: DevicePush = { version: 1, pushId: randomUUID(), jobId: 'j', deviceId: 'spec-device', app, platform: 'apns', token: 'a'.repeat(64),
    userId: 'u', content: { title: 'Hi' }, priority: 'high', acceptedAt: new Date().toISOString() };
  return { push, inbound: { body: Buffer.from(JSON.stringify(push)), headers: {}, routingKey: 'push.apns.send', redelivered: false, attempt: 1, queue: 'push.apns.send' } };
}

/** A pusher for an app with APNs credentials of its own, read from `credentialsDb` (opened with `key`); one credential failure bans the app. */
function pusherReadingCredentialsFrom(credentialsDb: Database, { key }: { key: SecretBox | undefined } = { key: box }) {
  const metrics = createPusherMetrics(new Registry());
  const bans = createAppBans({ threshold: 1, windowMs: 60_000, cooldownMs: 60_000 }, logger, new Registry());
  const providers = createProviderPool({
    platform: 'apns', idleMs: 60_000, logger, failureTtlMs: 0,
    fallback: () => Promise.reject(new Error('the app has credentials of its own')),
    hasOwn: () => true,
    build: appProviderFactory({ platform: 'apns', credentials: createAppCredentialStore(credentialsDb.kysely, key), sandboxStateDir: '/nonexistent', requestTimeoutMs: 1000, logger }),
  });
  const handle = createPusherHandler({
    platform: 'apns', providers, bans, ledger: t.db.ledger,
    apps: { get: async (id) => ({ id, apnsTopic: 'com.herald.own', fcmProjectId: null, enabled: true, apnsAuth: 'token', createdAt: new Date(), updatedAt: new Date() }) },
    publisher: { publish: async () => undefined, publishMany: async () => undefined },
    metrics, logger, owner: 'pusher-a', leaseMs: 60_000,
  });
  return { handle, bans, metrics, close: () => providers.close() };
}

describe("an app's own credentials that cannot be read", () => {
  it('while their database is out of reach: the push is retried, its claim let go, and the app is not banned', async () => {
    const pusher = pusherReadingCredentialsFrom(unreachable);
    const m = message();
    const [outcome] = await pusher.handle([m.inbound]);
    expect(outcome).toMatchObject({ kind: 'retry', code: 'transient', reason: expect.stringMatching(/^credentials: .*ECONNREFUSED/) });
    // Never sent: not marked sent before, so its first send is a fresh one for its lane.
    expect(outcome).not.toHaveProperty('headers');
    expect(pusher.bans.banned('own-keys')).toBeUndefined();
    // Released: the retried copy (here, another pusher's) may claim it at once.
    expect((await t.db.ledger.claim([m.push.pushId], 'pusher-b', 60_000)).get(m.push.pushId)).toBe('claimed');
    await pusher.close();
  });

  it.each([
    ['sealed with another HERALD_SECRET_KEY', createSecretBox('22'.repeat(32))],
    ['without HERALD_SECRET_KEY', undefined],
  ])("that this pusher cannot open (%s): the push is retried for a replica that can, counted, and the app is not banned", async (_, key) => {
    const app = `sealed-${randomUUID().slice(0, 8)}`;
    await createAppCredentialStore(t.db.kysely, box).create({ id: app, enabled: true, apns: { auth: 'token', keyPem: 'not read here', keyId: 'KEY1234567', teamId: 'TEAM123456', endpoint: 'production' } });
    const pusher = pusherReadingCredentialsFrom(t.db, { key });
    const [outcome] = await pusher.handle([message(app).inbound]);
    expect(outcome).toMatchObject({ kind: 'retry', code: 'transient', reason: expect.stringMatching(/^credentials: .*HERALD_SECRET_KEY/) });
    expect(pusher.bans.banned(app)).toBeUndefined();
    expect((await pusher.metrics.credentialsUnreadable.get()).values).toEqual([{ labels: { platform: 'apns', app }, value: 1 }]);
    await pusher.close();
  });

  it("that are no sealed envelope at all (the record's own fault, whatever the key): parked, and counted towards a ban", async () => {
    const app = `unsealed-${randomUUID().slice(0, 8)}`;
    await createAppCredentialStore(t.db.kysely, box).create({ id: app, enabled: true, apns: { auth: 'token', keyPem: 'not read here', keyId: 'KEY1234567', teamId: 'TEAM123456', endpoint: 'production' } });
    await t.db.kysely.updateTable('apps').set({ apns_secret: 'plain text pasted by hand' }).where('id', '=', app).execute();
    const pusher = pusherReadingCredentialsFrom(t.db);
    const [outcome] = await pusher.handle([message(app).inbound]);
    expect(outcome).toMatchObject({ kind: 'park', code: 'provider-rejected', reason: expect.stringMatching(/^credentials: .*not a sealed secret/) });
    expect(pusher.bans.banned(app)).toBeDefined();
    expect((await pusher.metrics.credentialsUnreadable.get()).values).toEqual([]);
    await pusher.close();
  });

  it('because there are none: the push is parked as the provider would refuse it, and counts towards a ban', async () => {
    const pusher = pusherReadingCredentialsFrom(t.db);
    const [outcome] = await pusher.handle([message().inbound]);
    expect(outcome).toMatchObject({ kind: 'park', code: 'provider-rejected', reason: expect.stringContaining('credentials: app "own-keys" has no APNs credentials') });
    expect(pusher.bans.banned('own-keys')).toBeDefined();
    await pusher.close();
  });
});
