import { Exchanges, Headers, Queues, parkedQueueFor } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker, type Broker } from '@herald/messaging';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fcmToken } from '../support/fixtures.ts';
import { API_TEST_ENV, call, teamKey } from '../support/http-api.ts';
import { startSystem, type System } from '../support/system.ts';

type ErrorBody = { error: { code: string; message: string; issues?: Array<{ path: string; message: string }> } };

/** Topics and follows through the HTTP API and push.registrations (issue 20): last event wins, bad input named or parked. */
describe('audience membership', () => {
  let sys: System;
  let key: string;
  let raw: Broker;

  const topic = async (name: string) => (await call<{ subscribers: number }>(sys, 'GET', `/v1/topics/${name}`, { key })).body;
  const subscribe = (name: string, body: Record<string, unknown>) => call<Record<string, unknown>>(sys, 'POST', `/v1/topics/${name}/subscriptions`, { key, body });

  beforeAll(async () => {
    sys = await startSystem({ only: ['api', 'registrar'], env: API_TEST_ENV });
    key = await teamKey(sys, 'team-demo', ['demo']);
    raw = await connectBroker({ url: sys.vhost.amqpUrl, logger: createLogger({ service: 'test', level: 'warn', format: 'json' }), connectionName: 'raw' });
  });
  afterAll(async () => {
    await raw?.close();
    await sys?.stop();
  });

  it('creates, lists, shows and deletes topics; the app comes from the key', async () => {
    expect((await call(sys, 'POST', '/v1/topics', { key, body: { name: 'breaking-news' } })).status).toBe(201);
    expect((await call(sys, 'POST', '/v1/topics', { key, body: { name: 'breaking-news' } })).status).toBe(200);
    expect((await call(sys, 'POST', '/v1/topics', { key, body: { name: 'doomed' } })).status).toBe(201);
    const list = await call<{ topics: Array<{ name: string; subscribers: number }> }>(sys, 'GET', '/v1/topics', { key });
    expect(list.body.topics.map((t) => t.name)).toEqual(['breaking-news', 'doomed']);
    expect((await call(sys, 'DELETE', '/v1/topics/doomed', { key })).status).toBe(204);
    expect((await call(sys, 'GET', '/v1/topics/doomed', { key })).status).toBe(404);
  });

  it('subscribe/unsubscribe out of order: the last event wins, visible in the count', async () => {
    const users = ['u1', 'u2', 'u3'];
    expect((await subscribe('breaking-news', { users, devices: [{ platform: 'fcm', token: fcmToken() }], subscribed: true, eventAt: '2025-05-01T10:00:00Z' })).body).toEqual({ applied: 4, stale: 0, subscribers: 4 });
    // u2 leaves at 12:00; a subscribe from 11:00 arrives late and changes nothing.
    expect((await subscribe('breaking-news', { users: ['u2'], subscribed: false, eventAt: '2025-05-01T12:00:00Z' })).body).toEqual({ applied: 1, stale: 0, subscribers: 3 });
    expect((await subscribe('breaking-news', { users: ['u2'], subscribed: true, eventAt: '2025-05-01T11:00:00Z' })).body).toEqual({ applied: 0, stale: 1, subscribers: 3 });
    expect((await topic('breaking-news')).subscribers).toBe(3);
  });

  it('applies membership and follow events from push.registrations, parking an unknown topic and a bad event with a reason', async () => {
    await sys.client.subscribeToTopic({ app: 'demo', topic: 'breaking-news', userId: 'u9', eventAt: '2025-05-02T00:00:00Z' });
    await sys.client.follow({ app: 'demo', follower: 'u1', followee: 'star', eventAt: '2025-05-02T00:00:00Z' });
    await waitFor('membership applied by the registrar', async () => (await topic('breaking-news')).subscribers === 4);
    const publish = (body: object) => raw.publisher.publish({ exchange: Exchanges.registrations, routingKey: Queues.registrations, body });
    await publish({ kind: 'topic-membership', app: 'demo', topic: 'no-such-topic', userId: 'u1', subscribed: true, eventAt: '2025-05-02T00:00:00Z', marker: 'x' });
    await publish({ kind: 'topic-membership', app: 'demo', topic: 'no-such-topic', userId: 'u1', subscribed: true, eventAt: '2025-05-02T00:00:00Z' });
    await publish({ kind: 'follow', app: 'demo', follower: 'u1', followee: 'u1', following: true, eventAt: '2025-05-02T00:00:00Z' });
    const parked = async (match: (p: string) => boolean) =>
      waitFor('parked membership event', async () => (await peekMessages(sys.vhost.name, parkedQueueFor(Queues.registrations), 100)).find((m) => match(m.payload)));
    const unknown = await parked((p) => p.includes('no-such-topic') && !p.includes('marker'));
    expect(String(unknown.properties.headers?.[Headers.parkedReason])).toBe('unknown topic "no-such-topic" of app "demo"');
    const strict = await parked((p) => p.includes('marker'));
    expect(String(strict.properties.headers?.[Headers.parkedReason])).toMatch(/marker/);
    const self = await parked((p) => p.includes('"followee":"u1"'));
    expect(String(self.properties.headers?.[Headers.parkedReason])).toMatch(/followee: a user cannot follow themselves/);
    expect(sys.service('registrar').running).toBe(true);
  });

  it('refuses bad input with a 4xx naming the field', async () => {
    const unknown = await call<ErrorBody>(sys, 'POST', '/v1/topics/nope/subscriptions', { key, body: { users: ['u1'], subscribed: true } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toBe('unknown topic "nope" of app "demo"');
    const big = await subscribe('breaking-news', { users: Array.from({ length: 1001 }, (_, i) => `u${i}`), subscribed: true });
    expect(big.status).toBe(400);
    expect((big.body as ErrorBody).error.issues?.[0]?.path).toBe('users');
    expect((big.body as ErrorBody).error.message).toMatch(/at most 1000 members/);
    const mixed = await subscribe('breaking-news', { users: Array.from({ length: 600 }, (_, i) => `u${i}`), devices: Array.from({ length: 401 }, () => ({ platform: 'fcm', token: fcmToken() })), subscribed: true });
    expect(mixed.status).toBe(400);
    expect((mixed.body as ErrorBody).error.message).toMatch(/this one has 1001/);
    const follow = await call<ErrorBody>(sys, 'POST', '/v1/follows', { key, body: { events: [{ follower: 'a', followee: 'b', following: 'yes', eventAt: '2025-05-01T00:00:00Z' }] } });
    expect(follow.status).toBe(400);
    expect(follow.body.error.issues?.[0]?.path).toBe('events.0.following');
    const badName = await call<ErrorBody>(sys, 'POST', '/v1/topics', { key, body: { name: 'no spaces' } });
    expect(badName.status).toBe(400);
    expect(badName.body.error.issues?.[0]?.path).toBe('name');
    const good = await call(sys, 'POST', '/v1/follows', { key, body: { events: [{ follower: 'a', followee: 'b', following: true, eventAt: '2025-05-01T00:00:00Z' }, { follower: 'a', followee: 'b', following: true, eventAt: '2025-04-01T00:00:00Z' }] } });
    expect(good.body).toEqual({ applied: 1, stale: 1 });
  });
});
