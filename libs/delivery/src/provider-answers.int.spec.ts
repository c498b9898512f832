/**
 * The documented rules end to end: provider answer → classifier → what the pusher does with it.
 * Each answer, as the providers lib classifies it, is what a provider double answers to one push of
 * a fresh app, handled by the pusher (pusher.ts) against PostgreSQL (the ledger, the app's row) and
 * RabbitMQ (the invalidations it publishes), with a ban after a single credential or topic failure.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { invalidationQueueFor, pushServiceOf, sendQueueFor, type DevicePush, type Platform } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, type Broker, type InboundMessage } from '@herald/messaging';
import { asProcessRefusal, classifyApnsFailure, classifyFcmError, classifyWebPushAnswer, type SendResult } from '@herald/providers';
import { Registry } from '@herald/runtime';
import { createTestDatabase, createTestVhost, managementRequest, peekMessages, type TestDatabase, type TestVhost } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppBans, settingsKeyOf } from './app-ban.ts';
import { PROVIDER_REJECTED } from './park-outcomes.ts';
import { singleProvider } from './provider-pool.ts';
import { createPusherHandler } from './pusher.ts';
import { createPusherMetrics } from './pusher-metrics.ts';

const logger = createLogger({ service: 'provider-answers-spec', level: 'silent', format: 'json' });
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;
beforeAll(async () => {
  t = await createTestDatabase('answers');
  vhost = await createTestVhost('answers');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'provider-answers-spec' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
});
afterAll(async () => {
  await broker?.close();
  await vhost?.delete();
  await t?.drop();
});

const tokenFor = (platform: Platform): string =>
  platform === 'apns'
    ? randomBytes(32).toString('hex')
    : platform === 'fcm'
      ? `${randomBytes(11).toString('base64url')}:APA91b${randomBytes(60).toString('base64url')}`
      : `https://fcm.googleapis.com/fcm/send/${randomUUID()}`;

/** A push to a device the claim does not look up (its deviceId is no devices row): only the answer decides. */
const devicePush = (platform: Platform, app: string): DevicePush => ({
  version: 1,
  pushId: randomUUID(),
  jobId: `job-${randomUUID()}`,
  deviceId: `spec-${randomUUID()}`,
  app,
  platform,
  token: tokenFor(platform),
  ...(platform === 'web' && { webKeys: { p256dh: `B${'A'.repeat(86)}`, auth: 'A'.repeat(22) } }),
  userId: 'u1',
  content: { title: 'Hi' },
  priority: 'high',
  acceptedAt: new Date().toISOString(),
});

const inbound = (push: DevicePush): InboundMessage => ({
  body: Buffer.from(JSON.stringify(push)),
  headers: {},
  routingKey: sendQueueFor(push.platform),
  redelivered: false,
  attempt: 1,
  queue: sendQueueFor(push.platform),
});

interface Handled {
  /** The outcome the consumer gets: `ack`, or `park <code>`. */
  outcome: string;
  /** A park's reason. */
  reason?: string;
  /** The reasons of the invalidations published to RabbitMQ for the push's token. */
  invalidations: string[];
  /** Whether the app is banned afterwards for a push like it (one credential or topic failure bans it here; a refused VAPID JWT at that push service). */
  banned: boolean;
  /** The push's ledger entry afterwards (none: its claim released). */
  ledger: string | undefined;
}

/**
 * One push of a fresh app whose provider answers `answer`, through the pusher. `lately`: the same
 * pusher delivered a push of the app to another device just before (so the app's settings work).
 */
async function handled(platform: Platform, answer: SendResult, { lately }: { lately: boolean }): Promise<Handled> {
  const app = await t.db.apps.upsert({ id: `answers-${randomUUID().slice(0, 8)}`, apnsTopic: 'com.herald.spec' });
  const bans = createAppBans({ threshold: 1, windowMs: 60_000, cooldownMs: 60_000 }, logger, new Registry());
  const other = devicePush(platform, app.id);
  const push = devicePush(platform, app.id);
  const handle = createPusherHandler({
    platform,
    providers: singleProvider({ platform, send: async (p) => (p.token === other.token ? { kind: 'delivered' } : answer), close: async () => undefined }),
    bans,
    ledger: t.db.ledger,
    apps: t.db.apps,
    publisher: broker.publisher,
    metrics: createPusherMetrics(new Registry()),
    logger,
    owner: 'provider-answers-spec',
    leaseMs: 30_000,
  });
  if (lately) expect(await handle([inbound(other)])).toEqual([{ kind: 'ack' }]);
  const [outcome] = await handle([inbound(push)]);
  if (outcome === undefined) throw new Error('no outcome');
  // A dead token's push is acked once its invalidation is confirmed.
  if (outcome.kind === 'ack' && outcome.after !== undefined) await outcome.after;
  const queue = invalidationQueueFor(platform);
  const published = (await peekMessages(vhost.name, queue)).map((m) => JSON.parse(m.payload) as { token: string; reason: string });
  await managementRequest('DELETE', `/queues/${encodeURIComponent(vhost.name)}/${encodeURIComponent(queue)}/contents`);
  const entry = await t.db.kysely.selectFrom('delivery_ledger').select('state').where('push_id', '=', push.pushId).executeTakeFirst();
  return {
    outcome: outcome.kind === 'park' ? `park ${outcome.code}` : outcome.kind,
    ...(outcome.kind === 'park' && { reason: outcome.reason }),
    invalidations: published.filter((i) => i.token === push.token).map((i) => i.reason),
    banned: bans.banned(app.id, settingsKeyOf(app), platform === 'web' ? pushServiceOf(push.token, app.webPushHosts) : undefined) !== undefined,
    ledger: entry?.state,
  };
}

const invalidated = (reason: string): Handled => ({ outcome: 'ack', invalidations: [reason], banned: false, ledger: 'done' });
const parked = (reason: unknown, banned = false): Handled => ({ outcome: `park ${PROVIDER_REJECTED}`, reason: reason as string, invalidations: [], banned, ledger: undefined });

describe('provider answers through the pusher: dead token, park, or ban', () => {
  const tokenOrApp: Array<[string, Platform, SendResult]> = [
    ['APNs 400 BadDeviceToken', 'apns', classifyApnsFailure({ status: 400, reason: 'BadDeviceToken' })],
    ['APNs 400 DeviceTokenNotForTopic', 'apns', classifyApnsFailure({ status: 400, reason: 'DeviceTokenNotForTopic' })],
    ['FCM SENDER_ID_MISMATCH', 'fcm', classifyFcmError({ code: 'messaging/mismatched-credential', message: 'SenderId mismatch', httpStatus: 403 })],
    ['FCM SENDER_ID_MISMATCH (v1 code)', 'fcm', classifyFcmError({ code: 'SENDER_ID_MISMATCH' })],
  ];

  it.each<[string, Platform, SendResult]>([
    ['APNs 410 Unregistered', 'apns', classifyApnsFailure({ status: 410, reason: 'Unregistered', timestamp: 1 })],
    ['FCM UNREGISTERED', 'fcm', classifyFcmError({ code: 'messaging/registration-token-not-registered', httpStatus: 404 })],
    ['FCM UNREGISTERED (v1 code)', 'fcm', classifyFcmError({ code: 'UNREGISTERED' })],
  ])("%s invalidates the token (a dead token, never an app ban), whatever the app's other pushes do", async (_, platform, answer) => {
    const reason = answer.kind === 'dead-token' ? answer.reason : 'not a dead-token answer';
    expect(await handled(platform, answer, { lately: true })).toEqual(invalidated(reason));
    expect(await handled(platform, answer, { lately: false })).toEqual(invalidated(reason));
  });

  it.each(tokenOrApp)("%s invalidates the token while the app's other pushes are delivered", async (_, platform, answer) => {
    expect(await handled(platform, answer, { lately: true })).toEqual(invalidated(answer.kind === 'dead-token' ? answer.reason : 'not a dead-token answer'));
  });

  it.each(tokenOrApp)("%s keeps the token when none of the app's pushes was delivered lately (its environment, topic or sender may be wrong), and bans nothing", async (_, platform, answer) => {
    expect(await handled(platform, answer, { lately: false })).toEqual(parked(expect.stringMatching(/token kept: none of this app's pushes was delivered in the last hour/)));
  });

  it.each<[string, Platform, SendResult, string]>([
    ['APNs 413 PayloadTooLarge', 'apns', classifyApnsFailure({ status: 413, reason: 'PayloadTooLarge' }), 'PayloadTooLarge'],
    ['APNs 400 InvalidPushType', 'apns', classifyApnsFailure({ status: 400, reason: 'InvalidPushType' }), 'InvalidPushType'],
    ['FCM INVALID_ARGUMENT (the message)', 'fcm', classifyFcmError({ code: 'messaging/invalid-argument', message: "Invalid value at 'message.data[0].value'" }), "invalid-argument: Invalid value at 'message.data[0].value'"],
  ])("%s parks the push with the provider's reason: no invalidation, no ban", async (_, platform, answer, reason) => {
    expect(answer).toEqual({ kind: 'permanent', reason });
    expect(await handled(platform, answer, { lately: false })).toEqual(parked(reason));
  });

  it.each<[string, Platform, SendResult]>([
    ['APNs 400 TopicDisallowed', 'apns', classifyApnsFailure({ status: 400, reason: 'TopicDisallowed' })],
    ['APNs 403 InvalidProviderToken', 'apns', classifyApnsFailure({ status: 403, reason: 'InvalidProviderToken' })],
  ])('%s counts towards banning the app (which alarms) and never invalidates the device', async (_, platform, answer) => {
    expect(await handled(platform, answer, { lately: true })).toEqual(parked(answer.kind === 'permanent' ? answer.reason : 'not a permanent answer', true));
  });

  it("a push service refusing the JWT of the web-pusher's own VAPID pair parks the push and bans no app (the deployment's WEB_PUSH_VAPID_* is at fault)", async () => {
    const pair = { publicKey: 'k', privateKey: 'p' };
    for (const answer of [{ status: 403, body: '{"reason":"BadJwtToken"}' }, { status: 401, body: 'Unauthorized' }]) {
      const refused = classifyWebPushAnswer(answer);
      const reason = refused.kind === 'permanent' ? refused.reason : 'not a permanent answer';
      // The app's own pair refused: the app's settings are at fault.
      expect(await handled('web', refused, { lately: true })).toEqual(parked(reason, true));
      expect(await handled('web', asProcessRefusal(refused, { subject: 'mailto:ops@localhost', pair, byProcess: false }), { lately: true })).toEqual(parked(reason, true));
      const asProcess = asProcessRefusal(refused, { subject: 'mailto:ops@localhost', pair, byProcess: true });
      expect(await handled('web', asProcess, { lately: true })).toEqual(parked(expect.stringMatching(/^process-vapid-refused: .*"mailto:ops@localhost"/)));
    }
    // Another answer to the process pair's push is what it was.
    const gone = classifyWebPushAnswer({ status: 410 });
    expect(asProcessRefusal(gone, { subject: 'mailto:ops@localhost', pair, byProcess: true })).toBe(gone);
  });

  it("FCM's THIRD_PARTY_AUTH_ERROR (Firebase's APNs or web credentials are wrong) parks that push and bans nothing: the app's Android pushes go on", async () => {
    for (const code of ['THIRD_PARTY_AUTH_ERROR', 'messaging/third-party-auth-error']) {
      const answer = classifyFcmError({ code, httpStatus: 401 });
      expect(await handled('fcm', answer, { lately: true })).toEqual(parked(answer.kind === 'permanent' ? answer.reason : 'not a permanent answer'));
    }
  });
});
