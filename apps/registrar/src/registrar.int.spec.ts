import { Registry } from '@herald/runtime';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Exchanges, parkedQueueFor, Queues } from '@herald/contracts';
import { createAppCache, createAppCredentialStore, createDatabase, createSecretBox, refusedValueReason, type Database } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, type InboundMessage } from '@herald/messaging';
import { createTestDatabase, createTestVhost, downThenUp, errorRecordingLogger, expectDeferredWithBackoff, queueInfo, waitFor, type TestDatabase } from '@herald/testing';
import { createRegistrarHandler, registrarErrors } from './registrar.ts';

const logger = createLogger({ service: 'registrar-test', level: 'silent' });
let t: TestDatabase;
let counted: Database;
const queries: string[] = [];

beforeAll(async () => {
  t = await createTestDatabase('registrar');
  await t.db.apps.upsert({ id: 'chat' });
  await t.db.apps.upsert({ id: 'mail' });
  await t.db.apps.upsert({ id: 'retired', enabled: false });
  counted = createDatabase({ url: t.url, schema: t.schema, poolSize: 2, onQuery: (q) => queries.push(q.sql) });
});
afterAll(async () => {
  await counted.close();
  await t.drop();
});

const message = (body: unknown) => ({
  body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
  headers: {},
  routingKey: 'push.registrations',
  redelivered: false,
  attempt: 1,
  queue: 'push.registrations',
});
/** Tokens of the right shape, named by a label: APNs hex, FCM registration-token text. */
const apns = (label: string): string => createHash('sha256').update(label).digest('hex');
const fcm = (label: string): string => `${label}:APA91b${'x'.repeat(40)}`;
const register = (label: string, extra: Record<string, unknown> = {}) => ({
  kind: 'register',
  app: 'chat',
  platform: 'apns',
  token: extra['platform'] === 'fcm' ? fcm(label) : apns(label),
  userId: 'user-1',
  timezone: 'Europe/Paris',
  eventAt: '2025-03-01T10:00:00Z',
  ...extra,
});
const device = (label: string) => t.db.kysely.selectFrom('devices').selectAll().where('token', 'in', [apns(label), fcm(label)]).executeTakeFirst();

describe('registrar handler', () => {
  it('parks each kind of bad input with a readable reason and applies the good ones, in one batch', async () => {
    const handle = createRegistrarHandler({ devices: counted.devices, apps: counted.apps, logger });
    queries.length = 0;
    const outcomes = await handle([
      message('{"kind": "register", '),
      message(register('t-no-user', { userId: undefined })),
      message(register('t-unknown', { app: 'ghost' })),
      message(register('t-disabled', { app: 'retired' })),
      message(register('t-good-1')),
      message(register('t-good-2', { app: 'mail', platform: 'fcm' })),
      message({ kind: 'unregister', app: 'chat', platform: 'apns', token: apns('t-gone'), eventAt: '2025-03-01T10:00:00Z' }),
    ]);
    expect(outcomes[0]).toMatchObject({
      kind: 'park',
      code: 'malformed-json',
      reason: expect.stringMatching(/^malformed JSON: /),
    });
    expect(outcomes[1]).toMatchObject({ kind: 'park', code: 'schema', reason: expect.stringContaining('userId') });
    expect(outcomes[2]).toEqual({ kind: 'park', code: 'unknown-app', reason: 'unknown app "ghost"' });
    expect(outcomes.slice(3)).toEqual([{ kind: 'ack' }, { kind: 'ack' }, { kind: 'ack' }, { kind: 'ack' }]);
    // One lookup per distinct app (chat, mail, ghost, retired) and one statement for all devices.
    expect(queries).toHaveLength(5);
    expect(await device('t-good-1')).toMatchObject({
      app: 'chat',
      user_id: 'user-1',
      timezone: 'Europe/Paris',
      invalidated_at: null,
    });
    expect(await device('t-good-2')).toMatchObject({ app: 'mail', platform: 'fcm' });
    expect(await device('t-gone')).toMatchObject({ invalidation_reason: 'unregistered' });
    // A disabled app's register is state, not a send: applied (the app's pushes are what park).
    expect(await device('t-disabled')).toMatchObject({ app: 'retired', user_id: 'user-1' });
    for (const token of ['t-no-user', 't-unknown']) expect(await device(token)).toBeUndefined();
  });

  it('acks a stale event without letting it change the device, and counts it', async () => {
    const registry = new Registry();
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: createAppCache(t.db.apps, 60_000), logger, registry });
    const newer = { kind: 'unregister', app: 'chat', platform: 'apns', token: apns('t-stale'), eventAt: '2025-03-02T00:00:00Z' };
    expect(await handle([message(newer)])).toEqual([{ kind: 'ack' }]);
    expect(await handle([message(register('t-stale', { eventAt: '2025-03-01T00:00:00Z' }))])).toEqual([{ kind: 'ack' }]);
    expect(await device('t-stale')).toMatchObject({ user_id: null, invalidation_reason: 'unregistered' });
    const counted = await registry.getSingleMetricAsString('herald_registrations_total');
    expect(counted).toContain('herald_registrations_total{kind="unregister",result="applied"} 1');
    expect(counted).toContain('herald_registrations_total{kind="register",result="stale"} 1');
  });

  it('throws while the database is unreachable, an error the consumer defers the batch for (registrarErrors.deferOn), and logs nothing itself', async () => {
    // Nothing listens on port 1: every query fails to connect.
    const broken = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/test', schema: t.schema });
    const quiet = createLogger({ service: 'registrar-test', level: 'silent' });
    const said = [vi.spyOn(quiet, 'error'), vi.spyOn(quiet, 'warn')];
    const handle = createRegistrarHandler({ devices: broken.devices, apps: t.db.apps, logger: quiet });
    const err = await handle([message('not json'), message(register('t-retry'))])
      .finally(() => broken.close())
      .then((o) => o, (e: unknown) => e);
    expect(registrarErrors.deferOn(err)).toMatchObject({ code: 'database-unavailable' });
    expect(registrarErrors.messageError(err)).toBeUndefined();
    // The bad one is parked, and told, when the batch comes back (nothing told for a deferred batch).
    expect(said.map((s) => s.mock.calls.length)).toEqual([0, 0]);
    expect(await device('t-retry')).toBeUndefined();
  });

  it('rides out a database outage on the consumer: the batch is deferred after a back-off that grows (0.5 s, 1 s, 2 s), no attempt or delivery count spent, one log line a batch (the consumer\'s), then applied', async () => {
    const vhost = await createTestVhost('registrar-outage');
    const retryDelaysMs = [1_000];
    const { logger: brokerLogger, errors: consumerErrors } = errorRecordingLogger('registrar-test');
    const handlerLogger = createLogger({ service: 'registrar-test', level: 'silent' });
    const handlerErrors = vi.spyOn(handlerLogger, 'error');
    const broker = await connectBroker({ url: vhost.amqpUrl, logger: brokerLogger, connectionName: 'registrar-outage-test' });
    const broken = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/test', schema: t.schema });
    try {
      // A delivery limit of 2: a batch requeued instead of deferred would be parked at its third delivery.
      await broker.applyTopology(heraldTopology({ retryDelaysMs, deliveryLimit: 2 }));
      const down = createRegistrarHandler({ devices: broken.devices, apps: broken.apps, logger: handlerLogger });
      const up = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger: handlerLogger });
      // The database is away for the first three deliveries, back for the fourth.
      const { handle, seen } = downThenUp<InboundMessage, ReturnType<typeof up>>(down, up, 3);
      const consumer = await broker.consume({ queue: Queues.registrations, prefetch: 10, retryDelaysMs, handle, ...registrarErrors });
      await broker.publisher.publish({ exchange: Exchanges.registrations, routingKey: Queues.registrations, body: register('t-outage'), messageId: 'outage' });
      await waitFor('applied once the database is back', () => device('t-outage'), { timeoutMs: 30_000 });
      await waitFor('acked', async () => (await queueInfo(vhost.name, Queues.registrations))?.messages === 0);
      await consumer.stop(1_000);
      expectDeferredWithBackoff(seen, consumerErrors());
      expect(handlerErrors.mock.calls).toHaveLength(0);
      expect((await queueInfo(vhost.name, parkedQueueFor(Queues.registrations)))?.messages).toBe(0);
    } finally {
      await broker.close();
      await broken.close();
      await vhost.delete();
    }
  });

  it('parks a token no provider could accept, naming the token rule; stores APNs hex in lower case, with its token kind', async () => {
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger });
    const outcomes = await handle([
      message({ ...register('x'), token: 'not a token' }),
      message({ ...register('x'), token: '../x', platform: 'fcm' }),
      message({ ...register('t-upper'), token: apns('t-upper').toUpperCase(), tokenKind: 'voip' }),
      message({ ...register('t-fcm-voip', { platform: 'fcm' }), tokenKind: 'voip' }),
    ]);
    expect(outcomes[0]).toMatchObject({ kind: 'park', code: 'schema', reason: expect.stringMatching(/token: not an APNs device token/) as unknown });
    expect(outcomes[1]).toMatchObject({ kind: 'park', code: 'schema', reason: expect.stringMatching(/token: not an FCM registration token/) as unknown });
    expect(outcomes[2]).toEqual({ kind: 'ack' });
    expect(outcomes[3]).toMatchObject({ kind: 'park', reason: expect.stringMatching(/tokenKind: VoIP and Live Activity tokens are APNs tokens/) as unknown });
    expect(await device('t-upper')).toMatchObject({ token: apns('t-upper'), token_kind: 'voip' });
    expect(await t.db.kysely.selectFrom('devices').select('token').where('token', 'in', ['not a token', '../x']).execute()).toEqual([]);
  });

  it('keeps the device when only its timezone or locale is bad: applied without them, never parked (the token would be lost)', async () => {
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger });
    const outcomes = await handle([
      message(register('t-mars', { timezone: 'Mars/Base' })),
      message(register('t-bad-locale', { locale: 'english language' })),
      message(register('t-underscore', { locale: 'en_US' })),
      message(register('t-zoned', { timezone: 'Asia/Kolkata', locale: 'hi-IN' })),
      message(register('t-mars-no-user', { timezone: 'Mars/Base', userId: undefined })),
    ]);
    expect(outcomes.slice(0, 4)).toEqual([{ kind: 'ack' }, { kind: 'ack' }, { kind: 'ack' }, { kind: 'ack' }]);
    // Another problem besides the zone still parks, naming every field.
    expect(outcomes[4]).toMatchObject({ kind: 'park', code: 'schema', reason: expect.stringMatching(/userId: .*timezone: /s) as unknown });
    expect(await device('t-mars')).toMatchObject({ timezone: null });
    expect(await device('t-bad-locale')).toMatchObject({ locale: null, timezone: 'Europe/Paris' });
    // iOS and Android spell locales with "_": taken as BCP 47.
    expect(await device('t-underscore')).toMatchObject({ locale: 'en-US' });
    expect(await device('t-zoned')).toMatchObject({ timezone: 'Asia/Kolkata', locale: 'hi-IN' });
  });

  it("keeps the device's stored timezone, locale and app version when a later register drops a bad one or gives none", async () => {
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger });
    const at = (day: number) => `2025-03-0${day}T10:00:00Z`;
    expect(await handle([message(register('t-berlin', { timezone: 'Europe/Berlin', locale: 'de-DE', appVersion: '5.2.0', eventAt: at(1) }))])).toEqual([{ kind: 'ack' }]);
    // Before, the zone was set to NULL: the device's 09:00-local digests arrived at 09:00 UTC.
    expect(await handle([message(register('t-berlin', { timezone: 'Mars/Base', locale: 'english language', eventAt: at(2) }))])).toEqual([{ kind: 'ack' }]);
    expect(await device('t-berlin')).toMatchObject({ timezone: 'Europe/Berlin', locale: 'de-DE', last_event_at: new Date(at(2)) });
    expect(await handle([message(register('t-berlin', { timezone: undefined, userId: 'user-2', eventAt: at(3) }))])).toEqual([{ kind: 'ack' }]);
    // A segment on appVersion ("appVersion >= 5.0") still finds the device.
    expect(await device('t-berlin')).toMatchObject({ user_id: 'user-2', timezone: 'Europe/Berlin', locale: 'de-DE', app_version: '5.2.0' });
    // A zone given replaces it.
    expect(await handle([message(register('t-berlin', { timezone: 'Asia/Tokyo', locale: 'ja-JP', appVersion: '5.3.0', eventAt: at(4) }))])).toEqual([{ kind: 'ack' }]);
    expect(await device('t-berlin')).toMatchObject({ timezone: 'Asia/Tokyo', locale: 'ja-JP', app_version: '5.3.0' });
    // An Android versionName ("2.3.1 (45)") or a bad last-seen time loses only that field, not the device.
    expect(await handle([message(register('t-berlin', { appVersion: '2.3.1 (45)', lastSeenAt: 'yesterday', userId: 'user-3', eventAt: at(5) }))])).toEqual([{ kind: 'ack' }]);
    expect(await device('t-berlin')).toMatchObject({ user_id: 'user-3', app_version: '5.3.0', last_event_at: new Date(at(5)) });
  });

  it('links the previousToken it names (an APNs one in upper case too); applies a register whose only problem is its previousToken without it, logged, never parked', async () => {
    const log = createLogger({ service: 'registrar-test', level: 'silent' });
    const warned = vi.spyOn(log, 'warn');
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger: log });
    const at = (day: number) => `2025-03-0${day}T10:00:00Z`;
    expect(await handle([message(register('t-rot-old', { eventAt: at(1) }))])).toEqual([{ kind: 'ack' }]);
    expect(await handle([message(register('t-rot-new', { previousToken: apns('t-rot-old').toUpperCase(), eventAt: at(2) }))])).toEqual([{ kind: 'ack' }]);
    expect(await device('t-rot-old')).toMatchObject({ invalidation_reason: 'replaced', replaced_by: (await device('t-rot-new'))?.id });
    expect(warned).not.toHaveBeenCalled();
    const outcomes = await handle([
      message(register('t-rot-bad', { previousToken: 'not a token' })),
      message(register('t-rot-self', { previousToken: apns('t-rot-self').toUpperCase() })),
      message(register('t-rot-no-user', { previousToken: 'not a token', userId: undefined })),
    ]);
    expect(outcomes.slice(0, 2)).toEqual([{ kind: 'ack' }, { kind: 'ack' }]);
    // Another problem besides it still parks.
    expect(outcomes[2]).toMatchObject({ kind: 'park', code: 'schema', reason: expect.stringMatching(/^schema violation: userId: /) as unknown });
    expect(await device('t-rot-bad')).toMatchObject({ user_id: 'user-1', invalidated_at: null });
    expect(await device('t-rot-self')).toMatchObject({ user_id: 'user-1', invalidated_at: null, replaced_by: null });
    const dropped = warned.mock.calls.filter(([, msg]) => typeof msg === 'string' && msg.startsWith('registration applied without a field'));
    expect(dropped.map(([fields]) => (fields as { reason: string }).reason)).toEqual([
      expect.stringMatching(/previousToken: previousToken is not an APNs device token/),
      expect.stringMatching(/previousToken: previousToken is the token itself/),
    ]);
  });

  it("throws for a value PostgreSQL refuses, so the consumer isolates that one message, not the batch (a token too long for the index)", async () => {
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger });
    // FCM's token alphabet allows 4,096 characters; PostgreSQL's unique index holds at most 2,704 bytes of it.
    const huge = register('t-huge', { platform: 'fcm', token: `huge:${randomBytes(2400).toString('base64url')}` });
    const err = await handle([message(register('t-beside-huge')), message(huge)]).then((o) => o, (e: unknown) => e);
    expect(refusedValueReason(err)).toMatch(/index row size|exceeds/i);
    // Alone, its neighbour is applied (the consumer's halves: retry.int.spec.ts).
    expect(await handle([message(register('t-beside-huge'))])).toEqual([{ kind: 'ack' }]);
    expect(await device('t-beside-huge')).toBeDefined();
  });

  it('applies an unregister of a disabled app (a logout during an incident)', async () => {
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger });
    await t.db.apps.upsert({ id: 'paused', enabled: true });
    expect(await handle([message(register('t-paused', { app: 'paused' }))])).toEqual([{ kind: 'ack' }]);
    await t.db.apps.upsert({ id: 'paused', enabled: false });
    const logout = { kind: 'unregister', app: 'paused', platform: 'apns', token: apns('t-paused'), eventAt: '2025-03-02T10:00:00Z' };
    expect(await handle([message(logout)])).toEqual([{ kind: 'ack' }]);
    expect((await device('t-paused'))?.invalidated_at).not.toBeNull();
  });

  it("applies a register of a disabled app: another user's login on the phone takes it, so the first user's pushes do not reach it once the app is enabled", async () => {
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger });
    await t.db.apps.upsert({ id: 'halted', enabled: true });
    expect(await handle([message(register('t-shared', { app: 'halted', userId: 'alice' }))])).toEqual([{ kind: 'ack' }]);
    await t.db.apps.upsert({ id: 'halted', enabled: false });
    // Bob logs in on Alice's phone during the incident; before, this parked (app-disabled) and the phone stayed Alice's.
    const bob = register('t-shared', { app: 'halted', userId: 'bob', eventAt: '2025-03-02T10:00:00Z' });
    expect(await handle([message(bob), message(register('t-halted-new', { app: 'halted' }))])).toEqual([{ kind: 'ack' }, { kind: 'ack' }]);
    expect(await device('t-shared')).toMatchObject({ user_id: 'bob', invalidated_at: null });
    expect(await device('t-halted-new')).toMatchObject({ app: 'halted', user_id: 'user-1' });
  });

  describe('web registers and the app\'s VAPID keys', () => {
    /** A P-256 public key (uncompressed point, base64url), as VAPID public keys and p256dh are. */
    const p256 = (): string => {
      const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
      return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]).toString('base64url');
    };
    const vapidPair = () => ({ publicKey: p256(), privateKey: randomBytes(32).toString('base64url') });
    const endpoint = (label: string) => `https://fcm.googleapis.com/fcm/send/${label}`;
    const web = (label: string, app: string, applicationServerKey?: string) =>
      message({
        kind: 'register',
        app,
        platform: 'web',
        token: endpoint(label),
        keys: { p256dh: p256(), auth: randomBytes(16).toString('base64url') },
        ...(applicationServerKey !== undefined && { applicationServerKey }),
        userId: 'user-web',
        eventAt: '2025-03-01T10:00:00Z',
      });
    const stored = (label: string) => t.db.kysely.selectFrom('devices').select('web_vapid_key').where('token', '=', endpoint(label)).executeTakeFirst();

    // Refused, a browser subscribed under the web-pusher's own pair before the app got keys of its
    // own could not register again (another user logging in on it); a key Herald holds no pair for
    // parks its pushes with that reason instead (web-signing-key.ts).
    it("takes any applicationServerKey, the app's current, previous or another, and records it", async () => {
      const store = createAppCredentialStore(t.db.kysely, createSecretBox(randomBytes(32).toString('hex')));
      await t.db.apps.upsert({ id: 'site' });
      const [first, second] = [vapidPair(), vapidPair()];
      await store.generateVapid('site', { subject: 'mailto:ops@example.com', keys: first });
      await store.rotateVapid('site', { keys: second });
      const handle = createRegistrarHandler({ devices: t.db.devices, apps: createAppCache(t.db.apps, 60_000), logger });
      const processKey = p256();
      expect(await handle([web('w-new', 'site', second.publicKey), web('w-old', 'site', `${first.publicKey}=`), web('w-unnamed', 'site'), web('w-process', 'site', processKey)])).toEqual([
        { kind: 'ack' },
        { kind: 'ack' },
        { kind: 'ack' },
        { kind: 'ack' },
      ]);
      expect([await stored('w-new'), await stored('w-old'), await stored('w-unnamed'), await stored('w-process')]).toEqual([
        { web_vapid_key: second.publicKey },
        { web_vapid_key: first.publicKey },
        { web_vapid_key: second.publicKey },
        { web_vapid_key: processKey },
      ]);
    });

    it("takes any key for an app without VAPID keys of its own: the web-pusher's WEB_PUSH_VAPID_* pair signs, which no door knows", async () => {
      await t.db.apps.upsert({ id: 'keyless' });
      const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger });
      const key = p256();
      expect(await handle([web('w-keyless', 'keyless', key)])).toEqual([{ kind: 'ack' }]);
      expect(await stored('w-keyless')).toEqual({ web_vapid_key: key });
    });
  });

  it('handles an empty batch', async () => {
    const handle = createRegistrarHandler({ devices: t.db.devices, apps: t.db.apps, logger });
    expect(await handle([])).toEqual([]);
  });
});
