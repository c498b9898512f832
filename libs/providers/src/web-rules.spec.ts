import type { DevicePush } from '@herald/contracts';
import { describe, expect, it } from 'vitest';
import { buildWebPayload, buildWebRequest, webRequestFromNow, webRequestOf } from './web-payload.ts';
import { WEB_PUSH_DEFAULT_TTL_S, webRequestProblem, webTopic, webTtlSeconds, webUrgency } from './web-rules.ts';

const now = new Date('2030-01-01T12:00:00Z');
const push = (over: Partial<DevicePush> = {}): DevicePush => ({
  version: 1,
  pushId: '6f1c2f8e-3a64-5a3e-9c55-0d1f7d0b4a11',
  jobId: 'job-1',
  deviceId: 'd1',
  app: 'demo',
  platform: 'web',
  token: 'https://push.example.com/s/1',
  webKeys: { p256dh: `B${'A'.repeat(86)}`, auth: 'A'.repeat(22) },
  userId: 'u1',
  content: { title: 'Hi' },
  priority: 'high',
  acceptedAt: now.toISOString(),
  ...over,
});

describe('Web Push TTL (RFC 8030 §5.2)', () => {
  it('is 28 days without an expiry, the seconds left until expiresAt, 0 for now-or-never', () => {
    expect(webTtlSeconds(push(), now)).toBe(WEB_PUSH_DEFAULT_TTL_S);
    expect(WEB_PUSH_DEFAULT_TTL_S).toBe(2_419_200);
    expect(webTtlSeconds(push({ expiresAt: '2030-01-01T13:00:00.900Z' }), now)).toBe(3600);
    expect(webTtlSeconds(push({ expiresAt: '2029-12-31T00:00:00Z' }), now)).toBe(0);
    expect(webTtlSeconds(push({ expiresAt: '2030-03-01T00:00:00Z' }), now)).toBe(WEB_PUSH_DEFAULT_TTL_S);
    expect(webTtlSeconds(push({ nowOrNever: true, expiresAt: '2030-01-01T12:01:00Z' }), now)).toBe(0);
  });
});

describe('Web Push Urgency (RFC 8030 §5.3)', () => {
  it('follows priority (high → high, normal → normal) unless content.web.urgency says otherwise', () => {
    expect(webUrgency(push())).toBe('high');
    expect(webUrgency(push({ priority: 'normal' }))).toBe('normal');
    expect(webUrgency(push({ content: { title: 'x', web: { urgency: 'very-low' } } }))).toBe('very-low');
  });
});

describe('Web Push Topic (RFC 8030 §5.4)', () => {
  it('is content.web.topic, else a collapse key that already meets the rule, else a stable 32-character digest of it', () => {
    expect(webTopic(push())).toBeUndefined();
    expect(webTopic(push({ collapseKey: 'chat-420' }))).toBe('chat-420');
    expect(webTopic(push({ collapseKey: 'chat-42', content: { title: 'x', web: { topic: 'mine' } } }))).toBe('mine');
    const long = webTopic(push({ collapseKey: 'a collapse key with spaces' }));
    expect(long).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(webTopic(push({ collapseKey: 'a collapse key with spaces' }))).toBe(long);
    expect(webTopic(push({ collapseKey: 'another key with spaces' }))).not.toBe(long);
    expect(webTopic(push({ collapseKey: 'x'.repeat(33) }))).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(webTopic(push({ collapseKey: 'x'.repeat(33) }))).not.toBe('x'.repeat(32));
  });
});

describe('Web Push request rules', () => {
  it("sends a topic whose length is not a multiple of 4 as its digest, a chosen one too (Apple's push service refuses 1, 5, 9 … 29 characters: BadWebPushTopic); multiples of 4 as they are", () => {
    for (const key of ['spike', 'new_event', 'notification-test', 'x'.repeat(29), 'ab', 'abc', 'chat-42']) {
      const topic = webTopic(push({ collapseKey: key }));
      expect(topic).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(webTopic(push({ collapseKey: key }))).toBe(topic);
      expect(webTopic(push({ content: { title: 'x', web: { topic: key } } }))).toBe(topic);
    }
    for (const key of ['newEvent', 'neueangebote', 'abcd', 'x'.repeat(32)]) expect(webTopic(push({ collapseKey: key }))).toBe(key);
    expect(webRequestProblem({ plaintext: '{}', ttl: 0, urgency: 'normal', topic: 'spike' })).toMatch(/BadWebPushTopic/);
    expect(webRequestProblem({ plaintext: '{}', ttl: 0, urgency: 'normal', topic: 'spik' })).toBeUndefined();
  });

  it('refuses more than 3,993 bytes of JSON (4,096 once encrypted), a bad topic, a bad urgency or TTL', () => {
    const ok = { plaintext: 'x'.repeat(3993), ttl: 0, urgency: 'normal' as const };
    expect(webRequestProblem(ok)).toBeUndefined();
    expect(webRequestProblem({ ...ok, plaintext: 'x'.repeat(3994) })).toMatch(/payload is 3994 bytes; Web Push allows 3993 bytes/);
    expect(webRequestProblem({ ...ok, plaintext: 'é'.repeat(1997) })).toMatch(/3994 bytes/);
    expect(webRequestProblem({ ...ok, topic: 'has space' })).toMatch(/topic/);
    expect(webRequestProblem({ ...ok, urgency: 'urgent' as 'high' })).toMatch(/urgency/);
    expect(webRequestProblem({ ...ok, ttl: -1 })).toMatch(/TTL/);
  });
});

describe('the JSON the service worker receives', () => {
  it('maps content to notification fields and names the job and push', () => {
    const p = push({
      collapseKey: 'chat-42',
      content: { title: 'T', subtitle: 'S', body: 'B', icon: 'https://e.com/i.png', imageUrl: 'https://e.com/p.png', clickAction: 'https://e.com/c', badge: 3, data: { k: 'v' } },
    });
    expect(buildWebPayload(p, now)).toEqual({
      title: 'T', subtitle: 'S', body: 'B', tag: 'chat-42', icon: 'https://e.com/i.png', image: 'https://e.com/p.png', url: 'https://e.com/c', badgeCount: 3,
      data: { k: 'v' }, jobId: 'job-1', pushId: p.pushId, sentAt: now.toISOString(),
    });
  });

  it('content.tag wins over the collapse key; a data-only push is silent; localized keys go under loc', () => {
    expect(buildWebPayload(push({ collapseKey: 'c', content: { title: 'x', tag: 't' } }), now)['tag']).toBe('t');
    expect(buildWebPayload(push({ content: { data: { a: 'b' } } }), now)).toMatchObject({ silent: true, data: { a: 'b' } });
    expect(buildWebPayload(push({ content: { locKey: 'k', locArgs: ['1'] } }), now)).toMatchObject({ loc: { key: 'k', args: ['1'] } });
  });

  it('merges content.web.payload last (null removes a key)', () => {
    const p = push({ content: { title: 'x', body: 'y', web: { payload: { body: null, actions: [{ action: 'open', title: 'Open' }] } } } });
    const payload = buildWebPayload(p, now);
    expect(payload).not.toHaveProperty('body');
    expect(payload['actions']).toEqual([{ action: 'open', title: 'Open' }]);
  });

  it('a request carries the JSON text, TTL, urgency and topic', () => {
    const r = buildWebRequest(push({ collapseKey: 'kkkk', priority: 'normal' }), now);
    expect(JSON.parse(r.plaintext)).toMatchObject({ title: 'Hi', jobId: 'job-1' });
    expect(r).toMatchObject({ ttl: WEB_PUSH_DEFAULT_TTL_S, urgency: 'normal', topic: 'kkkk' });
  });
});

describe('webRequestFromNow (a request made before a wait for budget, sent later)', () => {
  it('makes it as buildWebRequest would make it at the send (TTL and sentAt from then), a sentAt of content.web.payload standing as it does there', () => {
    const later = new Date(now.getTime() + 42_000);
    const expiresAt = new Date(now.getTime() + 3_600_000).toISOString();
    for (const p of [
      push({ expiresAt }),
      push({ collapseKey: 'chat-42', content: { title: 'T', data: { sentAt: 'mine' }, web: { payload: { actions: [] } } } }),
      push({ expiresAt, content: { title: 'T', web: { payload: { sentAt: 'the sender\'s' } } } }),
      push({ content: { title: 'T', web: { payload: { sentAt: null } } } }),
    ]) {
      const payload = buildWebPayload(p, now);
      const request = webRequestOf(p, payload, now);
      expect(request).toEqual(buildWebRequest(p, now));
      webRequestFromNow(request, payload, p, later);
      expect(request).toEqual(buildWebRequest(p, later));
    }
  });
});
