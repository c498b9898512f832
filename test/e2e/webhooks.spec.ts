import { randomUUID } from 'node:crypto';
import { Exchanges, Headers, Queues, WebhookHeaders, parkedQueueFor, verifyWebhookSignature } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { HeraldHeaders, connectBroker, type Broker } from '@herald/messaging';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { herald as runHerald } from '../support/cli.ts';
import { API_TEST_ENV, call, teamKey } from '../support/http-api.ts';
import { metric } from '../support/metrics.ts';
import { startSystem, type System } from '../support/system.ts';
import { startWebhookReceiver, type ReceivedPost, type Responder, type WebhookReceiver } from '../support/webhook-receiver.ts';

const TIMEOUT_MS = 3000;
const DISABLE_AFTER_MS = 1500;

describe('webhook subscriptions: signed callbacks for resource changes', () => {
  let sys: System;
  let raw: Broker;
  let key: string;
  let otherTeamKey: string;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    sys = await startSystem({
      only: ['api', 'webhook-fanout', 'webhook-pusher'],
      env: {
        ...API_TEST_ENV,
        WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        WEBHOOK_DISABLE_AFTER_MS: String(DISABLE_AFTER_MS),
        WEBHOOK_SUBSCRIPTION_CACHE_TTL_MS: '0',
        WEBHOOK_RESPONSE_BODY_LIMIT_BYTES: '1024',
      },
    });
    raw = await connectBroker({ url: sys.vhost.amqpUrl, logger: createLogger({ service: 'test', level: 'warn', format: 'json' }), connectionName: 'raw' });
    key = await teamKey(sys, 'ads-api-client', ['*']);
    otherTeamKey = await teamKey(sys, 'someone-else', ['*']);
  });
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await raw?.close();
    await sys?.stop();
  });

  async function receiver(respond?: Responder): Promise<WebhookReceiver> {
    const r = await startWebhookReceiver(respond === undefined ? {} : { respond });
    receivers.push(r);
    return r;
  }

  async function subscribe(callbackUrl: string, resourceId: string, resourceType = 'campaign'): Promise<{ id: string; secret: string }> {
    const r = await call(sys, 'POST', '/v1/subscriptions', { key, body: { callbackUrl, resourceType, resourceId } });
    expect(r.status).toBe(201);
    return { id: String(r.body['id']), secret: String(r.body['secret']) };
  }

  const change = (id: string, old: Record<string, unknown> | null, now: Record<string, unknown> | null, type = 'campaign') => ({
    id: `evt-${randomUUID()}`,
    resource: { type, id },
    old,
    new: now,
  });

  const signed = (post: ReceivedPost, secret: string) =>
    verifyWebhookSignature(post.headers[WebhookHeaders.signature] as string | undefined, post.rawBody, secret).ok;

  /** Nothing more arrives for a while (what "exactly once" can be checked with). */
  const settle = (ms = 1500) => new Promise((r) => setTimeout(r, ms));

  const parkedDelivery = (match: (payload: string) => boolean) =>
    waitFor('parked webhook delivery', async () => (await peekMessages(sys.vhost.name, parkedQueueFor(Queues.webhookSend), 1000)).find((m) => match(m.payload)), {
      timeoutMs: 20_000,
    });

  it('manages subscriptions per team: create returns the secret once, list and get never do, others see nothing', async () => {
    const hook = await receiver();
    const created = await call(sys, 'POST', '/v1/subscriptions', { key, body: { callbackUrl: hook.url, resourceType: 'ad', resourceId: 'ad-1', secret: 'my-own-secret-0123456789' } });
    expect(created).toMatchObject({ status: 201, body: { resourceType: 'ad', resourceId: 'ad-1', enabled: true, secret: 'my-own-secret-0123456789', team: 'ads-api-client' } });
    const id = String(created.body['id']);
    const got = await call(sys, 'GET', `/v1/subscriptions/${id}`, { key });
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty('secret');
    const listed = await call<{ subscriptions: Array<{ id: string }> }>(sys, 'GET', '/v1/subscriptions', { key });
    expect(listed.body.subscriptions.map((s) => s.id)).toContain(id);
    expect((await call(sys, 'GET', `/v1/subscriptions/${id}`, { key: otherTeamKey })).status).toBe(404);
    expect((await call(sys, 'DELETE', `/v1/subscriptions/${id}`, { key: otherTeamKey })).status).toBe(404);
    expect((await call(sys, 'DELETE', `/v1/subscriptions/${id}`, { key })).status).toBe(204);
    expect((await call(sys, 'GET', `/v1/subscriptions/${id}`, { key })).status).toBe(404);
    const generated = await call(sys, 'POST', '/v1/subscriptions', { key, body: { callbackUrl: hook.url, resourceType: 'ad', resourceId: '*' } });
    expect(String(generated.body['secret'])).toMatch(/^whsec_/);
  });

  it('delivers a change to every matching subscription (exact and wildcard) once, signed; others get nothing', async () => {
    const exact = await receiver();
    const wildcard = await receiver();
    const unrelated = await receiver();
    const subExact = await subscribe(exact.url, 'camp-1');
    const subWildcard = await subscribe(wildcard.url, '*');
    await subscribe(unrelated.url, 'camp-2');
    await subscribe(unrelated.url, 'camp-1', 'ad');
    const event = change('camp-1', { name: 'Spring', budget: 100, targeting: { geo: ['DE'] } }, { name: 'Spring', budget: 150, targeting: { geo: ['DE', 'FR'] } });
    const since = Date.now();
    await sys.client.publishChange(event);
    // The same event again (a publisher's retry): nobody is notified twice.
    await sys.client.publishChange(event);
    const a = await exact.waitFor({ eventId: event.id }, since);
    const b = await wildcard.waitFor({ eventId: event.id }, since);
    for (const [post, secret] of [[a, subExact.secret], [b, subWildcard.secret]] as const) {
      expect(signed(post, secret)).toBe(true);
      expect(post.body).toMatchObject({
        resource: { type: 'campaign', id: 'camp-1' },
        change: 'updated',
        diff: { budget: { old: 100, new: 150 }, targeting: { old: { geo: ['DE'] }, new: { geo: ['DE', 'FR'] } } },
      });
      expect(post.body['diff']).not.toHaveProperty('name');
      expect(post.headers[WebhookHeaders.notificationId]).toBe(post.body['id']);
      expect(Date.parse(String(post.body['createdAt']))).not.toBeNaN();
    }
    expect(a.body['id']).not.toBe(b.body['id']);
    expect(signed(a, subWildcard.secret)).toBe(false);
    await settle();
    expect(exact.posts.filter((p) => p.body['eventId'] === event.id)).toHaveLength(1);
    expect(wildcard.posts.filter((p) => p.body['eventId'] === event.id)).toHaveLength(1);
    expect(unrelated.posts).toHaveLength(0);
  });

  it("rotates a subscription's secret: deliveries carry a signature by each secret until the previous one expires, then by the new one only", async () => {
    const hook = await receiver();
    const sub = await subscribe(hook.url, 'camp-rotate');
    const rotated = await call(sys, 'POST', `/v1/subscriptions/${sub.id}/rotate-secret`, { key, body: { keepPreviousForS: 3600 } });
    expect(rotated.status).toBe(200);
    const secret = String(rotated.body['secret']);
    expect(secret).not.toBe(sub.secret);
    expect((await call(sys, 'POST', `/v1/subscriptions/${sub.id}/rotate-secret`, { key: otherTeamKey, body: {} })).status).toBe(404);
    const during = change('camp-rotate', { a: 1 }, { a: 2 });
    const since = Date.now();
    await sys.client.publishChange(during);
    const first = await hook.waitFor({ eventId: during.id }, since); // WEBHOOK_SUBSCRIPTION_CACHE_TTL_MS 0 here: the rotation is seen at once
    expect([signed(first, secret), signed(first, sub.secret)]).toEqual([true, true]);
    // The previous secret dropped (a rotation with no window): the new one only.
    const final = String((await call(sys, 'POST', `/v1/subscriptions/${sub.id}/rotate-secret`, { key, body: { keepPreviousForS: 0 } })).body['secret']);
    const after = change('camp-rotate', { a: 2 }, { a: 3 });
    await sys.client.publishChange(after);
    const second = await hook.waitFor({ eventId: after.id }, since);
    expect([signed(second, final), signed(second, secret), signed(second, sub.secret)]).toEqual([true, false, false]);
  });

  it('notifies two changes of different resources that share an event id (two teams chose the same id), each once', async () => {
    const hook = await receiver();
    await subscribe(hook.url, '*', 'ad');
    const first = change('ad-shared-1', { bid: 1 }, { bid: 2 }, 'ad');
    const second = { ...change('ad-shared-2', { bid: 5 }, { bid: 6 }, 'ad'), id: first.id };
    await sys.client.publishChange(first);
    await sys.client.publishChange(second);
    await waitFor('both changes notified', async () => (hook.posts.filter((p) => p.body['eventId'] === first.id).length === 2 ? true : undefined));
    const posts = hook.posts.filter((p) => p.body['eventId'] === first.id);
    expect(posts.map((p) => (p.body['resource'] as { id: string }).id).sort()).toEqual(['ad-shared-1', 'ad-shared-2']);
    expect(new Set(posts.map((p) => p.body['id'])).size).toBe(2);
  });

  it("a team cannot silence another team's change to the same resource by using its event id first; receivers are told who published each", async () => {
    const hook = await receiver();
    await subscribe(hook.url, 'camp-contested');
    const forged = change('camp-contested', { budget: 100 }, { budget: 0 });
    const real = { ...change('camp-contested', { budget: 100 }, { budget: 150 }), id: forged.id };
    expect((await call(sys, 'POST', '/v1/changes', { key: otherTeamKey, body: forged })).status).toBe(202);
    expect((await call(sys, 'POST', '/v1/changes', { key, body: real })).status).toBe(202);
    await waitFor('both changes notified', async () => (hook.posts.filter((p) => p.body['eventId'] === forged.id).length === 2 ? true : undefined));
    const posts = hook.posts.filter((p) => p.body['eventId'] === forged.id);
    expect(posts.map((p) => [p.body['publishedBy'], p.body['diff']]).sort()).toEqual([
      ['ads-api-client', { budget: { old: 100, new: 150 } }],
      ['someone-else', { budget: { old: 100, new: 0 } }],
    ]);
    // Who published is the key's team, never the caller's word.
    const claimed = await call(sys, 'POST', '/v1/changes', { key: otherTeamKey, body: { ...change('camp-contested', null, { budget: 1 }), publishedBy: 'ads-api-client' } });
    expect(claimed.status).toBe(400);
    expect(JSON.stringify(claimed.body)).toMatch(/publishedBy/);
  });

  it('accepts change events through the HTTP API too, and traces them on request', async () => {
    const hook = await receiver();
    const sub = await subscribe(hook.url, 'camp-http');
    const event = { ...change('camp-http', { status: 'draft' }, { status: 'live' }), trace: true };
    const since = Date.now();
    expect(await call(sys, 'POST', '/v1/changes', { key, body: event })).toMatchObject({ status: 202, body: { id: event.id } });
    const post = await hook.waitFor({ eventId: event.id }, since);
    expect(post.body['diff']).toEqual({ status: { old: 'draft', new: 'live' } });
    expect(signed(post, sub.secret)).toBe(true);
    await sys.service('webhook-fanout').waitForLog((l) => l.msg === 'trace: change fanned out' && l['eventId'] === event.id);
    await sys.service('webhook-pusher').waitForLog((l) => l.msg === 'trace: webhook POST answered' && l['notificationId'] === post.body['id']);
  });

  it('accepts change events from the CLI (herald change)', async () => {
    const hook = await receiver();
    await subscribe(hook.url, 'camp-cli');
    const since = Date.now();
    const args = ['change', '--type', 'campaign', '--id', 'camp-cli', '--old', '{"budget":5}', '--new', '{"budget":6}', '--event-id', 'evt-cli-1', '--json'];
    const change = await runHerald(sys.env, ...args);
    expect(change.code, change.stderr).toBe(0);
    const post = await hook.waitFor({ eventId: 'evt-cli-1' }, since);
    expect(post.body['diff']).toEqual({ budget: { old: 5, new: 6 } });
  });

  it('retries a receiver that fails twice (500) and delivers on the third try', async () => {
    const flaky = await receiver((_post, res, n) => {
      if (n < 2) res.writeHead(500).end('temporarily broken');
      else res.writeHead(204).end();
    });
    const sub = await subscribe(flaky.url, 'camp-flaky');
    const event = change('camp-flaky', { budget: 1 }, { budget: 2 });
    await sys.client.publishChange(event);
    await waitFor('three attempts', () => flaky.posts.length >= 3, { timeoutMs: 20_000 });
    await settle();
    expect(flaky.posts).toHaveLength(3);
    expect(new Set(flaky.posts.map((p) => p.body['id'])).size).toBe(1);
    expect(flaky.posts.map((p) => p.headers[WebhookHeaders.attempt])).toEqual(['1', '2', '3']);
    expect(flaky.posts.every((p) => signed(p, sub.secret))).toBe(true);
    const view = await call(sys, 'GET', `/v1/subscriptions/${sub.id}`, { key });
    expect(view.body).toMatchObject({ enabled: true, failingSince: null });
  });

  it('parks a delivery whose receiver keeps failing once its retries run out, and counts it parked under the team (where HeraldPushesFailing looks)', async () => {
    const pusher = sys.service('webhook-pusher');
    const before = await metric(pusher, 'herald_pushes_total', { platform: 'webhook', app: 'ads-api-client', outcome: 'parked' });
    const broken = await receiver((_post, res) => res.writeHead(503).end('down'));
    const sub = await subscribe(broken.url, 'camp-broken');
    await sys.client.publishChange(change('camp-broken', { a: 1 }, { a: 2 }));
    const parked = await parkedDelivery((p) => p.includes('camp-broken'));
    expect(String(parked.properties.headers?.[HeraldHeaders.parkedCode])).toBe('retries-exhausted');
    // Whose it is, kept from its retries: what `herald parked replay push.webhook.send --app <team>` / `--subscription <id>` match.
    expect([parked.properties.headers?.[HeraldHeaders.team], parked.properties.headers?.[HeraldHeaders.subscription]]).toEqual(['ads-api-client', sub.id]);
    expect(broken.posts).toHaveLength(3);
    await waitFor('the park counted', async () => (await metric(pusher, 'herald_pushes_total', { platform: 'webhook', app: 'ads-api-client', outcome: 'parked' })) === before + 1);
  });

  it("times out a hanging receiver without slowing another receiver's deliveries", async () => {
    const hanging = await receiver(() => undefined);
    const fast = await receiver();
    await subscribe(hanging.url, 'camp-hang');
    await subscribe(fast.url, 'camp-fast');
    for (let i = 0; i < 12; i++) await sys.client.publishChange(change('camp-hang', { n: i }, { n: i + 1 }));
    await waitFor('the hanging receiver holds its slots', () => hanging.posts.length >= 4);
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const event = change('camp-fast', { n: i }, { n: i + 1 });
      const sent = Date.now();
      await sys.client.publishChange(event);
      const post = await fast.waitFor({ eventId: event.id }, sent, 10_000);
      latencies.push(post.receivedAt - sent);
    }
    // Slowed down by the hanging host, a delivery would wait for its timeouts (3 s each).
    expect(Math.max(...latencies), `latencies (ms): ${latencies.join(', ')}`).toBeLessThan(TIMEOUT_MS / 2);
    // At most WEBHOOK_MAX_PER_HOST (4) requests were open at the hanging host at first.
    expect(hanging.posts.filter((p) => p.receivedAt < (hanging.posts[0]?.receivedAt ?? 0) + TIMEOUT_MS / 2)).toHaveLength(4);
    await waitFor('timeouts counted', async () => (await metric(sys.service('webhook-pusher'), 'herald_webhook_responses_total', { class: 'timeout' })) >= 4, { timeoutMs: 10_000 });
    // Parked after its last attempt, or once the subscription was disabled for failing: either way the reason says why.
    const parked = await parkedDelivery((p) => p.includes('camp-hang'));
    expect(String(parked.properties.headers?.[Headers.parkedReason])).toContain(`timed out after ${TIMEOUT_MS} ms`);
    expect(sys.service('webhook-pusher').running).toBe(true);
  });

  it('disables a subscription whose endpoint keeps failing for WEBHOOK_DISABLE_AFTER_MS, and alarms', async () => {
    const broken = await receiver((_post, res) => res.writeHead(503).end());
    const sub = await subscribe(broken.url, 'camp-broken');
    await sys.client.publishChange(change('camp-broken', { a: 1 }, { a: 2 }));
    await waitFor('first failure recorded', async () => (await call(sys, 'GET', `/v1/subscriptions/${sub.id}`, { key })).body['failingSince'] !== null);
    // Changes keep coming and keep failing; one whose last attempt fails once the endpoint has been
    // failing for DISABLE_AFTER_MS disables it.
    for (let i = 0; i < 8; i++) {
      await settle(DISABLE_AFTER_MS / 6);
      await sys.client.publishChange(change('camp-broken', { a: 2 + i }, { a: 3 + i }));
    }
    const view = await waitFor('disabled', async () => {
      const r = await call(sys, 'GET', `/v1/subscriptions/${sub.id}`, { key });
      return r.body['enabled'] === false && r;
    });
    expect(String(view.body['disabledReason'])).toMatch(/failing since .*HTTP 503/);
    expect(await metric(sys.service('webhook-pusher'), 'herald_webhook_subscriptions_disabled_total')).toBeGreaterThanOrEqual(1);
    const alarm = await sys.service('webhook-pusher').waitForLog((l) => l['subscriptionId'] === sub.id && l['alarm'] === 'webhook-subscription-disabled');
    expect(alarm.level).toBe(50);
    // A disabled subscription is not matched any more.
    const posts = broken.posts.length;
    await sys.client.publishChange(change('camp-broken', { a: 30 }, { a: 40 }));
    await settle();
    expect(broken.posts.length).toBe(posts);
    // Enabling it again clears the record.
    expect((await call(sys, 'POST', `/v1/subscriptions/${sub.id}/enable`, { key })).body).toMatchObject({ enabled: true, failingSince: null });
  });

  describe('bad input', () => {
    it('refuses an invalid callback URL with a 400 naming the field', async () => {
      for (const callbackUrl of ['ftp://hooks.example.com/x', 'http://hooks.example.com/x', 'not a url']) {
        const r = await call<{ error: { code: string; issues: Array<{ path: string; message: string }> } }>(sys, 'POST', '/v1/subscriptions', {
          key,
          body: { callbackUrl, resourceType: 'campaign', resourceId: 'c' },
        });
        expect(r.status).toBe(400);
        expect(r.body.error.issues[0]?.path).toBe('callbackUrl');
      }
    });

    it('refuses an unknown resource type, naming the field, for subscriptions and change events', async () => {
      const sub = await call<{ error: { code: string; issues: Array<{ path: string }> } }>(sys, 'POST', '/v1/subscriptions', {
        key,
        body: { callbackUrl: 'https://hooks.example.com/x', resourceType: 'banner', resourceId: 'b1' },
      });
      expect(sub).toMatchObject({ status: 422, body: { error: { code: 'unknown-resource-type', issues: [{ path: 'resourceType' }] } } });
      const chg = await call<{ error: { code: string; issues: Array<{ path: string }> } }>(sys, 'POST', '/v1/changes', { key, body: change('b1', null, { a: 1 }, 'banner') });
      expect(chg).toMatchObject({ status: 422, body: { error: { code: 'unknown-resource-type', issues: [{ path: 'resource.type' }] } } });
    });

    it('refuses a change event over WEBHOOK_MAX_CHANGE_BYTES (65,536 by default) with a 413 naming its larger state', async () => {
      const big = await call<{ error: { code: string; message: string; issues: Array<{ path: string }> } }>(sys, 'POST', '/v1/changes', {
        key,
        body: change('camp-huge', { creative: 'a' }, { creative: 'b'.repeat(70_000) }),
      });
      expect(big).toMatchObject({ status: 413, body: { error: { code: 'change-too-large', issues: [{ path: 'new' }] } } });
      expect(big.body.error.message).toContain('over the limit of 65536 (WEBHOOK_MAX_CHANGE_BYTES)');
    });

    it('parks a change event that fails the schema, with the reason, counts it, and keeps delivering', async () => {
      const body = { id: 'bad-event', resource: { type: 'campaign' }, old: null, new: { a: 1 }, occurredAt: 'last tuesday' };
      await raw.publisher.publish({ exchange: Exchanges.changes, routingKey: Queues.changes, body });
      const parked = await waitFor('parked change', async () =>
        (await peekMessages(sys.vhost.name, parkedQueueFor(Queues.changes), 100)).find((m) => m.payload.includes('bad-event')),
      );
      const reason = String(parked.properties.headers?.[Headers.parkedReason]);
      expect(reason).toMatch(/^schema violation/);
      expect(reason).toContain('resource.id');
      expect(reason).toContain('occurredAt');
      const fanout = sys.service('webhook-fanout');
      expect(await metric(fanout, 'herald_messages_parked_total', { queue: Queues.changes, code: 'schema' })).toBe(1);
      expect(await metric(fanout, 'herald_webhook_changes_total', { outcome: 'parked' })).toBe(1);
      const hook = await receiver();
      await subscribe(hook.url, 'camp-after-bad');
      const event = change('camp-after-bad', { a: 1 }, { a: 2 });
      const since = Date.now();
      await sys.client.publishChange(event);
      await hook.waitFor({ eventId: event.id }, since);
      expect(fanout.running && sys.service('webhook-pusher').running).toBe(true);
    });

    it('parks a delivery whose receiver answers with a redirect, without following it', async () => {
      const target = await receiver();
      const redirecting = await receiver((_post, res) => res.writeHead(302, { location: target.url }).end());
      await subscribe(redirecting.url, 'camp-redirect');
      await sys.client.publishChange(change('camp-redirect', { a: 1 }, { a: 2 }));
      const parked = await parkedDelivery((p) => p.includes('camp-redirect'));
      expect(String(parked.properties.headers?.[Headers.parkedReason])).toBe(`HTTP 302 redirect to ${target.url} not followed (subscribe the final URL)`);
      expect(String(parked.properties.headers?.[HeraldHeaders.parkedCode])).toBe('receiver-rejected');
      await settle(500);
      expect(redirecting.posts).toHaveLength(1);
      expect(target.posts).toHaveLength(0);
      expect(sys.service('webhook-pusher').running).toBe(true);
    });

    it("reads only the start of a receiver's huge answer body, and the delivery still counts", async () => {
      const HUGE = 256 * 1024 * 1024;
      let written = 0;
      const huge = await receiver((_post, res) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(HUGE) });
        const chunk = Buffer.alloc(64 * 1024, 120);
        const pump = (): void => {
          while (written < HUGE && !res.destroyed) {
            written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('close', () => undefined);
        pump();
      });
      const failingHuge = await receiver((_post, res, n) => {
        if (n === 0) res.writeHead(500).end(Buffer.alloc(8 * 1024 * 1024, 121));
        else res.writeHead(200).end();
      });
      await subscribe(huge.url, 'camp-huge');
      await subscribe(failingHuge.url, 'camp-huge-500');
      const pusher = sys.service('webhook-pusher');
      const before = await metric(pusher, 'herald_pushes_total', { platform: 'webhook', outcome: 'delivered' });
      await sys.client.publishChange(change('camp-huge', { a: 1 }, { a: 2 }));
      await sys.client.publishChange(change('camp-huge-500', { a: 1 }, { a: 2 }));
      await waitFor('both delivered', async () => (await metric(pusher, 'herald_pushes_total', { platform: 'webhook', outcome: 'delivered' })) >= before + 2, { timeoutMs: 20_000 });
      await settle(500);
      // The pusher hung up long before the body ended, and did not retry a delivered notification.
      expect(written).toBeLessThan(HUGE / 4);
      expect(huge.posts).toHaveLength(1);
      expect(failingHuge.posts).toHaveLength(2);
      const retried = pusher.logs.find((l) => l.msg === 'webhook delivery failed; will retry' && String(l['reason']).startsWith('HTTP 500: yyyy'));
      expect(String(retried?.['reason']).length).toBeLessThan(300);
      expect(pusher.running).toBe(true);
    });
  });
});
