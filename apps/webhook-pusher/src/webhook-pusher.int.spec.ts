import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parkedQueueFor, Queues } from '@herald/contracts';
import { createPusherMetrics } from '@herald/delivery';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, HeraldHeaders, listParked, type InboundMessage, type Outcome } from '@herald/messaging';
import { Registry } from '@herald/runtime';
import { createTestDatabase, createTestVhost, waitFor, type TestDatabase } from '@herald/testing';
import { HostSlots } from './host-slots.ts';
import { createSubscriptionCache } from './subscription-cache.ts';
import { createWebhookMetrics } from './webhook-metrics.ts';
import { createWebhookPusherHandler, SETTLE_TOGETHER_MS } from './webhook-pusher.ts';
import { createWebhookSender } from './webhook-sender.ts';

const logger = createLogger({ service: 'webhook-pusher-test', level: 'silent' });
let t: TestDatabase;
let receiver: Server;
let received = 0;
let callbackUrl: string;
beforeAll(async () => {
  t = await createTestDatabase('webhookpusher');
  receiver = createServer((_req, res) => (received++, res.end('ok')));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await t.drop();
  await new Promise((resolve) => receiver.close(resolve));
});

/** The handler as main.ts builds it, over the real ledger and subscriptions, behind `acquire`: its outcomes as decided, or promised. */
function rawHandler(
  acquire: (n: number, signal?: AbortSignal, app?: string, booked?: (turnInMs: number) => void) => Promise<boolean>,
  signal: AbortSignal,
  registry = new Registry(),
  slots = new HostSlots({ perHost: 4, maxQueued: 100, maxQueuedWhenSlow: 10 }),
  timeoutMs = 5000,
) {
  return createWebhookPusherHandler({
    subscriptions: createSubscriptionCache(t.db.subscriptions, 5000),
    tracking: { store: t.db.subscriptions, disableAfterMs: 86_400_000, lastAttempt: 6 },
    sender: createWebhookSender({ timeoutMs, bodyLimitBytes: 1024, allowLoopback: true }),
    slots,
    ledger: t.db.ledger,
    metrics: createPusherMetrics(registry),
    webhookMetrics: createWebhookMetrics(registry),
    logger,
    owner: 'webhook-pusher-test',
    leaseMs: 30_000,
    limiter: { acquire },
    signal,
  });
}

/** rawHandler's outcomes once each is decided. */
function handler(...args: Parameters<typeof rawHandler>) {
  const handle = rawHandler(...args);
  return async (messages: readonly InboundMessage[]): Promise<Outcome[]> => Promise.all(await handle(messages));
}

async function delivery(to = callbackUrl, attempt = 1, team = 'a'): Promise<InboundMessage> {
  const sub = await t.db.subscriptions.create({ team, callbackUrl: to, resourceType: 'campaign', resourceId: randomUUID(), secret: 's'.repeat(32) });
  const now = new Date().toISOString();
  const body = { notificationId: randomUUID(), eventId: randomUUID(), subscriptionId: sub.id, resource: { type: 'campaign', id: 'c1' }, diff: {}, createdAt: now, queuedAt: now };
  return { body: Buffer.from(JSON.stringify(body)), headers: {}, routingKey: 'push.webhook.send', redelivered: false, attempt, queue: 'push.webhook.send' };
}

const subscriptionOf = (m: InboundMessage): string => (JSON.parse(m.body.toString()) as { subscriptionId: string }).subscriptionId;
/** What every copy of a delivery carries (HeraldHeaders.team / subscription): whose it is, for `herald parked … --app / --subscription`. */
const ownerOf = (m: InboundMessage, team = 'a') => ({ [HeraldHeaders.team]: team, [HeraldHeaders.subscription]: subscriptionOf(m) });

describe('a webhook delivery not sent', () => {
  it('says the pusher stopped when its budget wait ended at shutdown, and that budget ran out when it did not; neither is sent, and both come back unspent', async () => {
    const stop = new AbortController();
    // The limiter's wait ends when its signal does: here the process is told to stop meanwhile.
    const [first, second] = [await delivery(), await delivery()];
    const stopped = await handler(async () => (stop.abort(), false), stop.signal)([first]);
    const unbudgeted = await handler(async () => false, new AbortController().signal)([second]);
    expect(stopped).toEqual([{ kind: 'defer', code: 'stopping', reason: 'the pusher stopped before sending it', delayMs: 1000, headers: ownerOf(first) }]);
    expect(unbudgeted).toEqual([{ kind: 'defer', code: 'unpaced', reason: 'no outbound budget within the wait bound', delayMs: 1000, headers: ownerOf(second) }]);
    // Refused at shutdown because its host's budget is booked 30 s ahead: come back then, not in a second.
    const later = new AbortController();
    const third = await delivery();
    const booked = await handler(async (_n, _signal, _host, onBooked) => (later.abort(), onBooked?.(30_000), false), later.signal)([third]);
    expect(booked).toEqual([{ kind: 'defer', code: 'unpaced', reason: "the host's own budget is booked 30000 ms ahead", delayMs: 30_000, headers: ownerOf(third) }]);
    expect(received).toBe(0);
    // Their ledger claims are let go: the next pusher to take them may send them at once.
    const ids = [first, second].map((m) => (JSON.parse(m.body.toString()) as { notificationId: string }).notificationId);
    expect(await t.db.ledger.claim(ids, 'another-pusher', 30_000)).toEqual(new Map(ids.map((id) => [id, 'claimed'])));
  });
});

describe('a webhook delivery another pusher holds', () => {
  it('comes back after a while, unsent, still naming whose it is', async () => {
    const held = await delivery();
    const id = (JSON.parse(held.body.toString()) as { notificationId: string }).notificationId;
    expect(await t.db.ledger.claim([id], 'another-pusher', 30_000)).toEqual(new Map([[id, 'claimed']]));
    const before = received;
    const outcomes = await handler(async () => true, new AbortController().signal)([held]);
    expect(outcomes).toEqual([{ kind: 'defer', code: 'in-flight', reason: `notification ${id} is claimed by another pusher`, delayMs: 5_000, headers: ownerOf(held) }]);
    expect(received).toBe(before);
  });
});

describe('a webhook delivery to a host without a free slot', () => {
  it('is deferred unspent while the host answers or only just failed, and spends an attempt (so it is parked at its last) once the host has not answered for 5 s', async () => {
    const host = new URL(callbackUrl).host;
    let clock = 0;
    const slots = new HostSlots({ perHost: 1, maxQueued: 0, maxQueuedWhenSlow: 0 }, () => clock);
    const taken = await slots.acquire(host);
    try {
      const handle = handler(async () => true, new AbortController().signal, new Registry(), slots);
      // Busy but answering: back in a second, no attempt spent.
      const busy = await delivery();
      expect(await handle([busy])).toEqual([{ kind: 'defer', code: 'host-busy', reason: `host ${host} is busy`, delayMs: 1000, headers: ownerOf(busy) }]);
      // Its last request failed (a reset on a kept-alive socket, a timeout) a moment ago: still unspent.
      slots.noteSpeed(host, true);
      clock = 4_999;
      const justFailed = await delivery();
      expect(await handle([justFailed])).toEqual([{ kind: 'defer', code: 'host-busy', reason: `host ${host} is busy`, delayMs: 1000, headers: ownerOf(justFailed) }]);
      // Slow for 5 s, a second failure not restarting the count: a turn of the retry schedule, which parks it after the last attempt.
      slots.noteSpeed(host, true);
      clock = 5_000;
      const [outcome] = await handle([await delivery(callbackUrl, 6)]);
      expect(outcome).toMatchObject({ kind: 'retry', code: 'transient' });
      expect(outcome?.kind === 'retry' && outcome.reason).toContain(`host ${host} is not answering`);
      expect(received).toBe(0);
    } finally {
      taken?.();
    }
  });
});

describe('a batch with a delivery whose receiver hangs', () => {
  it("settles the batch's answered deliveries within SETTLE_TOGETHER_MS, and the hanging ones once they time out, those timing out together in one round", async () => {
    const hanging = createServer(() => undefined);
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    try {
      const slowUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/hook`;
      const timeoutMs = 3 * SETTLE_TOGETHER_MS;
      const handle = rawHandler(async () => true, new AbortController().signal, new Registry(), undefined, timeoutMs);
      const before = received;
      const releases = vi.spyOn(t.db.ledger, 'release');
      const started = performance.now();
      const [slow, fast, alsoSlow] = await handle([await delivery(slowUrl), await delivery(), await delivery(slowUrl)]);
      const returnedMs = performance.now() - started;
      // The answered one is decided (and recorded) with the batch, not after the hanging one's timeout.
      expect(fast).toEqual({ kind: 'ack' });
      expect(received).toBe(before + 1);
      expect(returnedMs).toBeGreaterThanOrEqual(SETTLE_TOGETHER_MS - 50);
      expect(returnedMs).toBeLessThan(timeoutMs - 500);
      expect(slow).toBeInstanceOf(Promise);
      expect(releases).not.toHaveBeenCalled();
      for (const late of [slow, alsoSlow]) expect(await late).toMatchObject({ kind: 'retry', code: 'transient', reason: expect.stringContaining(`timed out after ${timeoutMs} ms`) });
      expect(performance.now() - started).toBeGreaterThanOrEqual(timeoutMs - 50);
      // The two timed out together: their claims let go in one statement, not one each.
      expect(releases).toHaveBeenCalledTimes(1);
      expect(releases.mock.calls[0]?.[0]).toHaveLength(2);
      releases.mockRestore();
    } finally {
      hanging.closeAllConnections();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });
});

describe('a webhook delivery that fails', () => {
  it('is counted retried only when a retry follows: on its last attempt the consumer parks it (counted parked then), not retried as well', async () => {
    const failing = createServer((_req, res) => {
      res.statusCode = 503;
      res.end('down');
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(failing.address() as AddressInfo).port}/hook`;
      const registry = new Registry();
      const handle = handler(async () => true, new AbortController().signal, registry);
      const outcomes = await handle([await delivery(url, 5), await delivery(url, 6)]);
      expect(outcomes.map((o) => o.kind)).toEqual(['retry', 'retry']);
      expect(await registry.metrics()).toMatch(/herald_pushes_total\{platform="webhook",app="a",outcome="retried"\} 1\n/);
    } finally {
      await new Promise((resolve) => failing.close(resolve));
    }
  });
});


describe('a webhook delivery parked by the pusher', () => {
  // An operator replays one team's or one subscription's parks (`herald parked replay push.webhook.send
  // --app <team>` / `--subscription <id>`): the body names no team, so the parked copy must.
  it("names its subscription's team and id on the parked copy, whether refused at once (401) or parked when its retries ran out (503)", async () => {
    const answering = (status: number) => createServer((_req, res) => ((res.statusCode = status), res.end('no')));
    const [rejecting, failing] = [answering(401), answering(503)];
    await Promise.all([rejecting, failing].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const vhost = await createTestVhost('webhook-pusher-park');
    const broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'webhook-pusher-park-test' });
    try {
      // One retry: the 503's second attempt is its last, parked retries-exhausted by the consumer from the handler's retry.
      const retryDelaysMs = [100];
      await broker.applyTopology(heraldTopology({ retryDelaysMs }));
      const consumer = await broker.consume({ queue: Queues.webhookSend, prefetch: 10, retryDelaysMs, handle: rawHandler(async () => true, new AbortController().signal) });
      const refused = await delivery(urlOf(rejecting), 1, 'team-refused');
      const exhausted = await delivery(urlOf(failing), 1, 'team-failing');
      for (const m of [refused, exhausted]) await broker.publisher.publish({ exchange: '', routingKey: Queues.webhookSend, body: m.body, messageId: subscriptionOf(m) });
      const parkedQueue = parkedQueueFor(Queues.webhookSend);
      await waitFor('both parked', async () => (await broker.queueCounts([parkedQueue])).get(parkedQueue)?.ready === 2, { timeoutMs: 20_000 });
      await consumer.stop(1_000);

      const parked = (await listParked({ url: vhost.amqpUrl, logger, queue: Queues.webhookSend })).messages;
      const byCode = new Map(parked.map((p) => [p.code, p]));
      expect(byCode.get('receiver-rejected')?.headers).toMatchObject(ownerOf(refused, 'team-refused'));
      expect(byCode.get('retries-exhausted')?.headers).toMatchObject(ownerOf(exhausted, 'team-failing'));
      // Read back as the team (the webhook's app) and the subscription, which `--app` and `--subscription` match.
      expect(parked.map((p) => [p.code, p.app, p.subscriptionId]).sort()).toEqual([
        ['receiver-rejected', 'team-refused', subscriptionOf(refused)],
        ['retries-exhausted', 'team-failing', subscriptionOf(exhausted)],
      ]);
    } finally {
      await broker.close();
      await vhost.delete();
      await Promise.all([rejecting, failing].map((server) => new Promise((resolve) => server.close(resolve))));
    }
  });
});
