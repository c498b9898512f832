import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevicePush, Registration } from '@herald/contracts';
import { AppAdminError, createAppCredentialStore } from './app-credentials.ts';
import { createSecretBox } from './secret-box.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { recordWebVapidKey } from './web-vapid-store.ts';

/** A P-256 public key (uncompressed point, base64url), as browsers' p256dh and VAPID public keys are. */
function p256(): string {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]).toString('base64url');
}
const keysOf = () => ({ p256dh: p256(), auth: randomBytes(16).toString('base64url') });
/** A VAPID pair shaped like web-push's generateVAPIDKeys(): the private part is 32 bytes base64url. */
const vapidPair = () => ({ publicKey: p256(), privateKey: randomBytes(32).toString('base64url') });
const endpoint = (n: string) => `https://fcm.googleapis.com/fcm/send/${n}`;
const NOW = new Date('2025-06-01T12:00:00Z');

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('webpush');
  await t.db.apps.upsert({ id: 'site' });
});
afterAll(() => t.drop());

const register = (token: string, keys: { p256dh: string; auth: string }, eventAt: string, extra: Partial<Registration> = {}): Registration =>
  ({ version: 1, kind: 'register', app: 'site', platform: 'web', token, userId: 'u-web', keys, eventAt, ...extra }) as Registration;
const targets = async (userId: string) => (await t.db.devices.findTargets([{ key: 'j', app: 'site', userIds: [userId], category: 'news' }], NOW)).get('j') ?? [];

describe('web subscriptions as devices', () => {
  it('stores the keys and the application server key, and targets return them with the endpoint as token', async () => {
    const keys = keysOf();
    const serverKey = p256();
    expect(await t.db.devices.applyRegistrations([register(endpoint('a'), keys, '2025-03-01T10:00:00Z', { applicationServerKey: serverKey } as Partial<Registration>)])).toEqual(['applied']);
    await t.db.devices.applyRegistrations([{ version: 1, kind: 'register', app: 'site', platform: 'fcm', token: `fcm:${'x'.repeat(40)}`, userId: 'u-web', eventAt: '2025-03-01T10:00:00Z' }]);
    const found = await targets('u-web');
    expect(found.find((d) => d.platform === 'web')).toMatchObject({ token: endpoint('a'), tokenKind: 'device', webKeys: keys, webVapidKey: serverKey });
    const phone = found.find((d) => d.platform === 'fcm');
    expect(phone).toBeDefined();
    expect(phone).not.toHaveProperty('webKeys');
    expect(phone).not.toHaveProperty('webVapidKey');
  });

  it('last event wins: a newer register replaces the keys, an older one changes nothing, an unregister by endpoint ends it', async () => {
    const [first, second, stale] = [keysOf(), keysOf(), keysOf()];
    const token = endpoint('b');
    await t.db.devices.applyRegistrations([register(token, first, '2025-03-01T10:00:00Z', { userId: 'u-b' } as Partial<Registration>)]);
    await t.db.devices.applyRegistrations([register(token, second, '2025-03-02T10:00:00Z', { userId: 'u-b' } as Partial<Registration>)]);
    expect(await t.db.devices.applyRegistrations([register(token, stale, '2025-03-01T12:00:00Z', { userId: 'u-b' } as Partial<Registration>)])).toEqual(['stale']);
    expect((await targets('u-b'))[0]?.webKeys).toEqual(second);
    await t.db.devices.applyRegistrations([{ version: 1, kind: 'unregister', app: 'site', platform: 'web', token, eventAt: '2025-03-03T10:00:00Z' }]);
    expect(await targets('u-b')).toEqual([]);
    // An older register delivered late does not resurrect it.
    expect(await t.db.devices.applyRegistrations([register(token, first, '2025-03-02T12:00:00Z', { userId: 'u-b' } as Partial<Registration>)])).toEqual(['stale']);
    expect(await targets('u-b')).toEqual([]);
  });

  it('a web register without applicationServerKey records the app\'s current VAPID key (none when the app has none)', async () => {
    const store = createAppCredentialStore(t.db.kysely, createSecretBox(randomBytes(32).toString('hex')));
    await t.db.apps.upsert({ id: 'keyed' });
    const [first, second] = [vapidPair(), vapidPair()];
    await store.generateVapid('keyed', { subject: 'mailto:ops@example.com', keys: first });
    const vapidKeyOf = async (app: string, token: string) =>
      (await t.db.kysely.selectFrom('devices').select('web_vapid_key').where('app', '=', app).where('token', '=', token).executeTakeFirstOrThrow()).web_vapid_key;

    await t.db.devices.applyRegistrations([register(endpoint('k1'), keysOf(), '2025-03-01T10:00:00Z', { app: 'keyed' } as Partial<Registration>)]);
    expect(await vapidKeyOf('keyed', endpoint('k1'))).toBe(first.publicKey);
    // After a rotation the subscription still names the key it was made with; a new one gets the new key; a named key wins.
    await store.rotateVapid('keyed', { keys: second });
    await t.db.devices.applyRegistrations([
      register(endpoint('k2'), keysOf(), '2025-03-01T10:00:00Z', { app: 'keyed' } as Partial<Registration>),
      register(endpoint('k3'), keysOf(), '2025-03-01T10:00:00Z', { app: 'keyed', applicationServerKey: first.publicKey } as Partial<Registration>),
    ]);
    expect(await vapidKeyOf('keyed', endpoint('k1'))).toBe(first.publicKey);
    expect(await vapidKeyOf('keyed', endpoint('k2'))).toBe(second.publicKey);
    expect(await vapidKeyOf('keyed', endpoint('k3'))).toBe(first.publicKey);
    // An app without VAPID keys, and other platforms, record none.
    await t.db.devices.applyRegistrations([register(endpoint('k4'), keysOf(), '2025-03-01T10:00:00Z')]);
    expect(await vapidKeyOf('site', endpoint('k4'))).toBeNull();
    await t.db.devices.applyRegistrations([{ version: 1, kind: 'register', app: 'keyed', platform: 'fcm', token: `fcm:${'k'.repeat(40)}`, userId: 'u-k', eventAt: '2025-03-01T10:00:00Z' }]);
    expect(await vapidKeyOf('keyed', `fcm:${'k'.repeat(40)}`)).toBeNull();
  });

  // A front end re-registers its subscription on every page load; re-recorded as the app's current key, a
  // subscription made under the web-pusher's pair (NULL) or a rotated-away key got pushes it refuses.
  it('the same subscription registered again without naming its key keeps the key it was recorded with; new keys mean a new subscription', async () => {
    const store = createAppCredentialStore(t.db.kysely, createSecretBox(randomBytes(32).toString('hex')));
    await t.db.apps.upsert({ id: 'later' });
    const vapidKeyOf = async (token: string) => (await t.db.kysely.selectFrom('devices').select('web_vapid_key').where('app', '=', 'later').where('token', '=', token).executeTakeFirstOrThrow()).web_vapid_key;
    const at = (day: number) => `2025-04-0${day}T10:00:00Z`;
    const [early, rotated] = [keysOf(), keysOf()];
    await t.db.devices.applyRegistrations([
      register(endpoint('l1'), early, at(1), { app: 'later' } as Partial<Registration>),
      register(endpoint('l2'), rotated, at(1), { app: 'later' } as Partial<Registration>),
    ]);
    expect(await vapidKeyOf(endpoint('l1'))).toBeNull(); // made while the app had no keys: the web-pusher's pair
    const [first, second] = [vapidPair(), vapidPair()];
    await store.generateVapid('later', { subject: 'mailto:ops@example.com', keys: first });
    await t.db.devices.applyRegistrations([register(endpoint('l2'), rotated, at(2), { app: 'later', applicationServerKey: first.publicKey } as Partial<Registration>)]);
    await store.rotateVapid('later', { keys: second });

    await t.db.devices.applyRegistrations([
      register(endpoint('l1'), early, at(3), { app: 'later', userId: 'u-again' } as Partial<Registration>),
      register(endpoint('l2'), rotated, at(3), { app: 'later' } as Partial<Registration>),
      register(endpoint('l3'), keysOf(), at(3), { app: 'later' } as Partial<Registration>),
    ]);
    expect([await vapidKeyOf(endpoint('l1')), await vapidKeyOf(endpoint('l2')), await vapidKeyOf(endpoint('l3'))]).toEqual([null, first.publicKey, second.publicKey]);
    // Resubscribed at the same endpoint (new keys): made with the key the front end has now.
    await t.db.devices.applyRegistrations([register(endpoint('l1'), keysOf(), at(4), { app: 'later' } as Partial<Registration>)]);
    expect(await vapidKeyOf(endpoint('l1'))).toBe(second.publicKey);
    // A key named wins; an unregister keeps the row's.
    await t.db.devices.applyRegistrations([register(endpoint('l2'), rotated, at(5), { app: 'later', applicationServerKey: second.publicKey } as Partial<Registration>)]);
    await t.db.devices.applyRegistrations([{ version: 1, kind: 'unregister', app: 'later', platform: 'web', token: endpoint('l2'), eventAt: at(6) }]);
    expect(await vapidKeyOf(endpoint('l2'))).toBe(second.publicKey);
  });

  it('a scheduled web push keeps its keys: the stored DevicePush is released as it was', async () => {
    const keys = keysOf();
    const push: DevicePush = {
      version: 1, pushId: '6f1c7a4e-9d2b-4c53-8f0a-1b2c3d4e5f60', jobId: 'job-s', deviceId: '1', app: 'site', platform: 'web', token: endpoint('s'),
      webKeys: keys, webVapidKey: p256(), userId: 'u-s', content: { title: 'hi' }, priority: 'high', acceptedAt: NOW.toISOString(),
    } as DevicePush;
    expect(await t.db.scheduled.schedule([{ dueAt: new Date(NOW.getTime() - 1000), push }])).toBe(1);
    let released: unknown;
    await t.db.scheduled.withDueBatch('web', NOW, 10, async (rows) => {
      released = JSON.parse(rows[0]?.payload ?? 'null');
    });
    expect(released).toMatchObject({ platform: 'web', token: endpoint('s'), webKeys: keys, webVapidKey: push.webVapidKey });
  });
});

describe('the VAPID key a subscription was found to take', () => {
  const rowOf = async (token: string) =>
    t.db.kysely.selectFrom('devices').select(['id', 'web_p256dh', 'web_auth', 'web_vapid_key', 'updated_at', 'last_event_at']).where('app', '=', 'site').where('token', '=', token).executeTakeFirstOrThrow();
  const sentTo = (row: Awaited<ReturnType<typeof rowOf>>, token: string) => ({
    deviceId: row.id,
    endpoint: token,
    keys: { p256dh: row.web_p256dh ?? '', auth: row.web_auth ?? '' },
    vapidKey: row.web_vapid_key ?? undefined,
  });

  it('is recorded on the device while it holds the subscription the push went to, and moves no event time', async () => {
    const [guessed, taken] = [p256(), p256()];
    const token = endpoint('learned');
    await t.db.devices.applyRegistrations([register(token, keysOf(), '2025-03-01T10:00:00Z', { applicationServerKey: guessed } as Partial<Registration>)]);
    const before = await rowOf(token);
    expect(await recordWebVapidKey(t.db.kysely, sentTo(before, token), taken)).toBe(true);
    const after = await rowOf(token);
    expect(after).toEqual({ ...before, web_vapid_key: taken });
    // A device recording none (the web-pusher's pair) takes one too.
    const unkeyed = endpoint('learned-null');
    await t.db.devices.applyRegistrations([register(unkeyed, keysOf(), '2025-03-01T10:00:00Z')]);
    const row = await rowOf(unkeyed);
    expect(row.web_vapid_key).toBeNull();
    expect(await recordWebVapidKey(t.db.kysely, sentTo(row, unkeyed), taken)).toBe(true);
    expect((await rowOf(unkeyed)).web_vapid_key).toBe(taken);
  });

  it('is not recorded when the browser subscribed again meanwhile, the key recorded moved on, or the device is dead: the row wins', async () => {
    const [guessed, taken] = [p256(), p256()];
    const token = endpoint('resubscribed');
    await t.db.devices.applyRegistrations([register(token, keysOf(), '2025-03-01T10:00:00Z', { applicationServerKey: guessed } as Partial<Registration>)]);
    const sent = sentTo(await rowOf(token), token);
    // Subscribed again at the same endpoint: new keys, made with the key the front end named.
    await t.db.devices.applyRegistrations([register(token, keysOf(), '2025-03-02T10:00:00Z', { applicationServerKey: guessed } as Partial<Registration>)]);
    const resubscribed = await rowOf(token);
    expect(await recordWebVapidKey(t.db.kysely, sent, taken)).toBe(false);
    expect(await rowOf(token)).toEqual(resubscribed);
    // The same keys, but the key the row records is no longer the one the push was signed after.
    const now = sentTo(resubscribed, token);
    expect(await recordWebVapidKey(t.db.kysely, { ...now, vapidKey: p256() }, taken)).toBe(false);
    expect(await recordWebVapidKey(t.db.kysely, { ...now, vapidKey: undefined }, taken)).toBe(false);
    // Unregistered, or no devices id at all.
    await t.db.devices.applyRegistrations([{ version: 1, kind: 'unregister', app: 'site', platform: 'web', token, eventAt: '2025-03-03T10:00:00Z' }]);
    expect(await recordWebVapidKey(t.db.kysely, now, taken)).toBe(false);
    expect(await recordWebVapidKey(t.db.kysely, { ...now, deviceId: 'spec-device' }, taken)).toBe(false);
    expect((await rowOf(token)).web_vapid_key).toBe(guessed);
  });
});

describe('VAPID keys', () => {
  const box = createSecretBox(randomBytes(32).toString('hex'));

  it('generates once, rotates current to previous, reads both back, and seals the private keys at rest', async () => {
    const store = createAppCredentialStore(t.db.kysely, box);
    await t.db.apps.upsert({ id: 'blog' });
    const before = (await t.db.apps.get('blog'))?.credentialsVersion ?? 0;
    const [first, second, third] = [vapidPair(), vapidPair(), vapidPair()];
    const generated = await store.generateVapid('blog', { subject: 'mailto:ops@example.com', keys: first });
    expect(generated).toMatchObject({ webVapid: true, webVapidPublicKey: first.publicKey, webVapidPreviousPublicKey: null, webVapidSubject: 'mailto:ops@example.com', credentialsVersion: before + 1 });
    expect(await store.readWeb('blog')).toEqual({ subject: 'mailto:ops@example.com', current: first });
    await expect(store.generateVapid('blog', { subject: 'mailto:ops@example.com', keys: second })).rejects.toMatchObject({ code: 'vapid-exists' });

    const rotated = await store.rotateVapid('blog', { keys: second });
    expect(rotated).toMatchObject({ webVapidPublicKey: second.publicKey, webVapidPreviousPublicKey: first.publicKey, credentialsVersion: before + 2 });
    expect(await store.readWeb('blog')).toEqual({ subject: 'mailto:ops@example.com', current: second, previous: first });
    await store.rotateVapid('blog', { keys: third, subject: 'https://example.com/contact' });
    // Only one previous pair is kept: the first is gone.
    expect(await store.readWeb('blog')).toEqual({ subject: 'https://example.com/contact', current: third, previous: second });

    const raw = await t.db.kysely.selectFrom('apps').select(['web_vapid_secret', 'web_vapid_previous_secret']).where('id', '=', 'blog').executeTakeFirstOrThrow();
    expect(`${raw.web_vapid_secret} ${raw.web_vapid_previous_secret}`).not.toContain(third.privateKey);
    expect(`${raw.web_vapid_secret} ${raw.web_vapid_previous_secret}`).not.toContain(second.privateKey);
    await expect(createAppCredentialStore(t.db.kysely, createSecretBox(randomBytes(32).toString('hex'))).readWeb('blog')).rejects.toThrow(/cannot be opened/);
    // The app listing never carries a private key.
    expect(JSON.stringify(await t.db.apps.list())).not.toContain(third.privateKey);
  });

  it('refuses to rotate again while browsers are subscribed with the previous key (forgotten, their pushes would park), unless forced; two rotations at once: one is refused', async () => {
    const store = createAppCredentialStore(t.db.kysely, box);
    await t.db.apps.upsert({ id: 'shop' });
    const [k0, k1, k2, k3] = [vapidPair(), vapidPair(), vapidPair(), vapidPair()];
    await store.generateVapid('shop', { subject: 'mailto:ops@example.com', keys: k0 });
    await t.db.devices.applyRegistrations([register(endpoint('s1'), keysOf(), NOW.toISOString(), { app: 'shop', applicationServerKey: k0.publicKey } as Partial<Registration>)]);
    // Two operators rotate at once (or a request is retried): while one rotation holds the app's row
    // (k0 moved to previous, not yet committed), the other waits, then reads that row and is refused.
    let second: Promise<unknown> | undefined;
    await t.db.kysely.transaction().execute(async (trx) => {
      await createAppCredentialStore(trx, box).rotateVapid('shop', { keys: k1 });
      second = store.rotateVapid('shop', { keys: k2 }).catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 200));
    });
    expect(await second).toMatchObject({ code: 'previous-vapid-in-use' });
    expect(await store.readWeb('shop')).toMatchObject({ current: k1, previous: k0 });
    await expect(store.rotateVapid('shop', { keys: k3 })).rejects.toMatchObject({ code: 'previous-vapid-in-use', message: expect.stringMatching(/still has browsers subscribed with its previous VAPID key/) as unknown });
    expect((await store.rotateVapid('shop', { keys: k3, force: true })).webVapidPublicKey).toBe(k3.publicKey);
  });

  it('refuses a rotation without keys, unknown apps, and keeps the host list apart from the credentials', async () => {
    const store = createAppCredentialStore(t.db.kysely, box);
    await t.db.apps.upsert({ id: 'nokeys' });
    await expect(store.rotateVapid('nokeys', { keys: vapidPair() })).rejects.toMatchObject({ code: 'no-vapid' });
    await expect(store.updateWebPush('nokeys', { subject: 'mailto:a@b.c' })).rejects.toMatchObject({ code: 'no-vapid' });
    await expect(store.generateVapid('ghost', { subject: 'mailto:a@b.c', keys: vapidPair() })).rejects.toBeInstanceOf(AppAdminError);
    expect(await store.readWeb('nokeys')).toBeUndefined();
    const version = (await t.db.apps.get('nokeys'))?.credentialsVersion;
    const hosts = await store.updateWebPush('nokeys', { hosts: ['127.0.0.1', '*.push.example.com'] });
    expect(hosts).toMatchObject({ webPushHosts: ['127.0.0.1', '*.push.example.com'], credentialsVersion: version, webVapid: false });
    expect((await store.updateWebPush('nokeys', { hosts: null })).webPushHosts).toBeNull();
  });
});
