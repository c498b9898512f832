import { describe, expect, it } from 'vitest';
import { buildApnsNotification } from './apns-notification.ts';
import { testPush } from './test-pushes.ts';

const NOW = new Date('2026-01-01T00:00:00Z');
const NOW_S = NOW.getTime() / 1000;
const push = (over: Parameters<typeof testPush>[1]) => testPush('apns', over);

describe('buildApnsNotification', () => {
  it('builds an alert with every content field, data at top level', () => {
    const p = push({
      content: { title: 'T', subtitle: 'S', body: 'B', badge: 0, sound: 'default', threadId: 'th', imageUrl: 'https://i.example/a.png', data: { k: 'v' } },
      collapseKey: 'c1',
      expiresAt: '2026-01-02T00:00:00.900Z',
    });
    expect(buildApnsNotification(p, 'com.example', NOW)).toEqual({
      headers: {
        'apns-topic': 'com.example',
        'apns-push-type': 'alert',
        'apns-priority': '10',
        'apns-expiration': String(Date.UTC(2026, 0, 2) / 1000),
        'apns-id': p.pushId,
        'apns-collapse-id': 'c1',
      },
      payload: {
        k: 'v',
        'image-url': 'https://i.example/a.png',
        aps: { alert: { title: 'T', subtitle: 'S', body: 'B' }, badge: 0, sound: 'default', 'thread-id': 'th', 'mutable-content': 1 },
      },
    });
  });

  it('a push without expiry is stored by Apple for 28 days, never sent with apns-expiration 0', () => {
    const { headers } = buildApnsNotification(push({ priority: 'normal' }), 't', NOW);
    expect(headers).toMatchObject({ 'apns-priority': '5', 'apns-expiration': String(NOW_S + 28 * 86_400), 'apns-push-type': 'alert' });
  });

  it("an alert without a collapse key collapses on its own push id: a copy sent again after no answer replaces itself on the screen; other push types carry none", () => {
    const p = push({});
    expect(buildApnsNotification(p, 't', NOW).headers['apns-collapse-id']).toBe(p.pushId);
    expect(buildApnsNotification(push({ collapseKey: 'likes' }), 't', NOW).headers['apns-collapse-id']).toBe('likes');
    // An HTTP/2 header value cannot start or end with whitespace (RFC 9113 §8.2.1): sent without it, or not at all.
    expect(buildApnsNotification(push({ collapseKey: ' breaking news ' }), 't', NOW).headers['apns-collapse-id']).toBe('breaking news');
    const blank = push({ collapseKey: ' ' });
    expect(buildApnsNotification(blank, 't', NOW).headers['apns-collapse-id']).toBe(blank.pushId);
    expect(buildApnsNotification(push({ content: { body: 'b', apns: { headers: { 'apns-collapse-id': 'x ' } } } }), 't', NOW).headers['apns-collapse-id']).toBe('x');
    expect(buildApnsNotification(push({ content: { contentAvailable: true, data: { k: 'v' } } }), 't', NOW).headers).not.toHaveProperty('apns-collapse-id');
    expect(buildApnsNotification(push({ content: { pushType: 'voip', data: { caller: 'Ann' } } }), 't', NOW).headers).not.toHaveProperty('apns-collapse-id');
  });

  it('ttl 0 (now or never) is apns-expiration 0', () => {
    expect(buildApnsNotification(push({ nowOrNever: true }), 't', NOW).headers['apns-expiration']).toBe('0');
  });

  it('sends content-available-only as background at priority 5, content-available 1', () => {
    const n = buildApnsNotification(push({ content: { contentAvailable: true }, priority: 'high' }), 't', NOW);
    expect(n.headers).toMatchObject({ 'apns-push-type': 'background', 'apns-priority': '5' });
    expect(n.payload).toEqual({ aps: { 'content-available': 1 } });
  });

  it('turns a data-only push into a background push (priority 5, content-available), not an empty alert', () => {
    const n = buildApnsNotification(push({ content: { data: { sync: '1' } }, priority: 'high' }), 't', NOW);
    expect(n.headers).toMatchObject({ 'apns-push-type': 'background', 'apns-priority': '5' });
    expect(n.payload).toEqual({ sync: '1', aps: { 'content-available': 1 } });
  });

  it("a background push's aps holds content-available only (Apple), whatever else the job gave for what would be shown", () => {
    const n = buildApnsNotification(push({ content: { data: { sync: '1' }, threadId: 'th', interruptionLevel: 'time-sensitive', relevanceScore: 0.5, targetContentId: 'x' } }), 't', NOW);
    expect(n.headers).toMatchObject({ 'apns-push-type': 'background' });
    expect(n.payload).toEqual({ sync: '1', aps: { 'content-available': 1 } });
  });

  it('keeps content-available on an alert push, which stays an alert', () => {
    const n = buildApnsNotification(push({ content: { body: 'b', contentAvailable: true } }), 't', NOW);
    expect(n.headers['apns-push-type']).toBe('alert');
    expect(n.payload).toEqual({ aps: { alert: { body: 'b' }, 'content-available': 1 } });
  });

  it('maps localized keys, category, interruption level, relevance score, target content id, mutable-content', () => {
    const n = buildApnsNotification(
      push({
        content: {
          titleLocKey: 'T_KEY', titleLocArgs: ['a'], locKey: 'B_KEY', locArgs: ['b', 'c'], actionCategory: 'REPLY',
          interruptionLevel: 'time-sensitive', relevanceScore: 0.5, targetContentId: 'chat-1', mutableContent: true,
        },
      }),
      't',
      NOW,
    );
    expect(n.payload).toEqual({
      aps: {
        alert: { 'title-loc-key': 'T_KEY', 'title-loc-args': ['a'], 'loc-key': 'B_KEY', 'loc-args': ['b', 'c'] },
        category: 'REPLY', 'mutable-content': 1, 'interruption-level': 'time-sensitive', 'relevance-score': 0.5, 'target-content-id': 'chat-1',
      },
    });
  });

  it("a critical alert's sound goes as Apple's sound dictionary (critical 1 and the name), a regular alert's as the file name", () => {
    const critical = buildApnsNotification(push({ content: { title: 'Gas leak', sound: 'alarm.caf', interruptionLevel: 'critical' } }), 't', NOW);
    expect(critical.payload).toEqual({ aps: { alert: { title: 'Gas leak' }, sound: { critical: 1, name: 'alarm.caf' }, 'interruption-level': 'critical' } });
    const timely = buildApnsNotification(push({ content: { title: 'Train leaves', sound: 'bell.caf', interruptionLevel: 'time-sensitive' } }), 't', NOW);
    expect((timely.payload as { aps: { sound: unknown } }).aps.sound).toBe('bell.caf');
  });

  it('a VoIP push goes to <bundle>.voip with push type voip', () => {
    const n = buildApnsNotification(push({ content: { pushType: 'voip', data: { caller: 'Ann' } } }), 'com.example', NOW);
    expect(n.headers).toMatchObject({ 'apns-topic': 'com.example.voip', 'apns-push-type': 'voip', 'apns-priority': '10' });
  });

  it('a VoIP push chosen through the apns-push-type header is built as one: no content-available, the .voip topic', () => {
    const n = buildApnsNotification(push({ content: { data: { caller: 'Ann' }, apns: { headers: { 'apns-push-type': 'voip' } } } }), 'com.example', NOW);
    expect(n.headers).toMatchObject({ 'apns-topic': 'com.example.voip', 'apns-push-type': 'voip', 'apns-priority': '10' });
    expect(n.payload).toEqual({ caller: 'Ann', aps: {} });
  });

  it('a Live Activity push goes to <bundle>.push-type.liveactivity with event, content-state and the job\'s acceptance as timestamp', () => {
    // Sent an hour after acceptance (a retry, a pause): the timestamp stays the acceptance time, so it never looks newer than a later update.
    const later = new Date(NOW.getTime() + 3_600_000);
    const n = buildApnsNotification(push({ content: { liveActivity: { event: 'update', contentState: { score: '2-1' }, dismissalDate: 1_900_000_000 } } }), 'com.example', later);
    expect(n.headers).toMatchObject({ 'apns-topic': 'com.example.push-type.liveactivity', 'apns-push-type': 'liveactivity' });
    expect(n.payload).toEqual({ aps: { event: 'update', timestamp: NOW_S, 'content-state': { score: '2-1' }, 'dismissal-date': 1_900_000_000 } });
  });

  it("a Live Activity's sound goes in its alert, beside its title and body, as Apple's ActivityKit payload has it", () => {
    const la = { event: 'update' as const, contentState: { score: '2-1' } };
    const withAlert = buildApnsNotification(push({ content: { title: 'Goal!', sound: 'goal.caf', liveActivity: la } }), 'com.example', NOW);
    expect(withAlert.payload).toEqual({ aps: { alert: { title: 'Goal!', sound: 'goal.caf' }, event: 'update', timestamp: NOW_S, 'content-state': { score: '2-1' } } });
    const soundOnly = buildApnsNotification(push({ content: { sound: 'default', liveActivity: la } }), 'com.example', NOW);
    expect(soundOnly.payload).toMatchObject({ aps: { alert: { sound: 'default' } } });
    expect(soundOnly.payload).not.toHaveProperty('aps.sound');
    // An ordinary alert keeps its sound in aps.
    expect(buildApnsNotification(push({ content: { title: 'Hi', sound: 'default' } }), 'com.example', NOW).payload).toEqual({ aps: { alert: { title: 'Hi' }, sound: 'default' } });
  });

  it('merges the raw apns override last: headers replace, payload and aps merge key by key', () => {
    const n = buildApnsNotification(
      push({ content: { body: 'b', apns: { headers: { 'apns-priority': '5', 'apns-collapse-id': 'x' }, payload: { extra: 1, aps: { 'sound-name': 's' } } } } }),
      't',
      NOW,
    );
    expect(n.headers).toMatchObject({ 'apns-priority': '5', 'apns-collapse-id': 'x' });
    expect(n.payload).toEqual({ extra: 1, aps: { alert: { body: 'b' }, 'sound-name': 's' } });
  });
});
