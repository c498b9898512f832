import { describe, expect, it } from 'vitest';
import { buildFcmMessage, fcmTtlFromNow } from './fcm-message.ts';
import { FCM_TOKEN, testPush } from './test-pushes.ts';

const NOW = new Date('2026-01-01T00:00:00Z');
const NOW_S = NOW.getTime() / 1000;
const push = (over: Parameters<typeof testPush>[1]) => testPush('fcm', over);

describe('buildFcmMessage (the v1 Message as Google documents it)', () => {
  it('maps every content field to the v1 wire names', () => {
    const p = push({
      content: {
        title: 'T', body: 'B', badge: 4, sound: 'default', threadId: 'th', imageUrl: 'https://i.example/a.png', data: { k: 'v' },
        channelId: 'news', clickAction: 'OPEN', tag: 't1', color: '#ff0000', icon: 'ic', locKey: 'BODY', locArgs: ['x'],
      },
      collapseKey: 'c1',
      expiresAt: '2026-01-01T01:00:00.700Z',
    });
    expect(buildFcmMessage(p, NOW)).toEqual({
      token: FCM_TOKEN,
      notification: { title: 'T', body: 'B', image: 'https://i.example/a.png' },
      data: { k: 'v' },
      android: {
        priority: 'HIGH',
        ttl: '3600s',
        collapse_key: 'c1',
        notification: { channel_id: 'news', click_action: 'OPEN', tag: 't1', color: '#ff0000', icon: 'ic', sound: 'default', notification_count: 4, body_loc_key: 'BODY', body_loc_args: ['x'] },
      },
      apns: {
        headers: { 'apns-priority': '10', 'apns-push-type': 'alert', 'apns-expiration': String(Date.UTC(2026, 0, 1, 1) / 1000), 'apns-collapse-id': 'c1' },
        payload: { aps: { alert: { title: 'T', body: 'B', 'loc-key': 'BODY', 'loc-args': ['x'] }, badge: 4, sound: 'default', 'thread-id': 'th', 'mutable-content': 1 } },
      },
    });
  });

  it("an alert's collapse key is also its Android tag, so a newer one replaces it on the screen as on an iPhone; the job's own tag wins", () => {
    const collapsing = buildFcmMessage(push({ content: { title: 'Score 2-1' }, collapseKey: 'match-42' }), NOW);
    expect(collapsing.android).toMatchObject({ collapse_key: 'match-42', notification: { tag: 'match-42' } });
    expect(collapsing.apns.headers['apns-collapse-id']).toBe('match-42');
    expect(buildFcmMessage(push({ content: { title: 'Hi', tag: 'chat-1' }, collapseKey: 'match-42' }), NOW).android.notification).toMatchObject({ tag: 'chat-1' });
    const plain = push({ content: { title: 'Hi' } });
    expect(buildFcmMessage(plain, NOW).android).not.toHaveProperty('notification.tag');
    // iOS through FCM: the header costs nothing of the payload, so it takes the push's own id.
    expect(buildFcmMessage(plain, NOW).apns.headers['apns-collapse-id']).toBe(plain.pushId);
    // An apns header of an override goes without spaces first or last (RFC 9113 §8.2.1); one of spaces only is none, Herald's stays.
    expect(buildFcmMessage(push({ content: { body: 'b', fcm: { apns: { headers: { 'apns-collapse-id': ' x ' } } } } }), NOW).apns.headers['apns-collapse-id']).toBe('x');
    const blank = push({ content: { body: 'b', fcm: { apns: { headers: { 'apns-collapse-id': ' ' } } } } });
    expect(buildFcmMessage(blank, NOW).apns.headers['apns-collapse-id']).toBe(blank.pushId);
  });

  it('without expiry: stored for FCM\'s maximum, 4 weeks, and 28 days for iOS through FCM', () => {
    const m = buildFcmMessage(push({}), NOW);
    expect(m.android.ttl).toBe('2419200s');
    expect(m.apns.headers['apns-expiration']).toBe(String(NOW_S + 2_419_200));
  });

  it('an expiry 40 days ahead is capped at 4 weeks (2419200s), not sent as an invalid ttl', () => {
    const m = buildFcmMessage(push({ expiresAt: new Date(NOW.getTime() + 40 * 86_400_000).toISOString() }), NOW);
    expect(m.android.ttl).toBe('2419200s');
  });

  it('ttl 0 (now or never) is android.ttl "0s" and apns-expiration 0', () => {
    const m = buildFcmMessage(push({ nowOrNever: true }), NOW);
    expect(m.android.ttl).toBe('0s');
    expect(m.apns.headers['apns-expiration']).toBe('0');
  });

  it('a data-only push to iOS through FCM is background at apns-priority 5, no empty alert; Android keeps its priority', () => {
    const m = buildFcmMessage(push({ content: { data: { sync: '1' } }, priority: 'high' }), NOW);
    expect(m.notification).toBeUndefined();
    expect(m.android.priority).toBe('HIGH');
    expect(m.apns).toEqual({
      headers: { 'apns-priority': '5', 'apns-push-type': 'background', 'apns-expiration': String(NOW_S + 2_419_200) },
      payload: { aps: { 'content-available': 1 } },
    });
  });

  it('a data-only push stays a data message on Android: no android.notification even with Android fields set', () => {
    const m = buildFcmMessage(push({ content: { data: { sync: '1' }, channelId: 'sync', tag: 't' } }), NOW);
    expect(m.android).toEqual({ priority: 'HIGH', ttl: '2419200s' });
  });

  // Notification is shared with iOS, whose aps.alert fields override only those they set: a body there showed the subtitle twice on iOS.
  it('an alert whose only text is a subtitle shows it as the body on Android only (Android has no subtitle); iOS keeps its subtitle, once', () => {
    const m = buildFcmMessage(push({ content: { subtitle: 'hi' } }), NOW);
    expect(m.notification).toBeUndefined();
    expect(m.android.notification).toEqual({ body: 'hi' });
    expect(m.apns.payload.aps['alert']).toEqual({ subtitle: 'hi' });
    expect(buildFcmMessage(push({ content: { title: 'T', subtitle: 'S' } }), NOW).notification).toEqual({ title: 'T' });
  });

  it.each<[string, object, Record<string, string>, object]>([
    ['a badge', { badge: 3 }, { herald_badge: '3' }, { badge: 3 }],
    ['a sound', { sound: 'default' }, { herald_sound: 'default' }, { sound: 'default' }],
    ['badge 0 (clears the badge on iOS)', { badge: 0, data: { chat: '1' } }, { herald_badge: '0', chat: '1' }, { badge: 0 }],
  ])('an alert with only %s reaches Android as a data message carrying it, no blank tray entry; iOS gets the aps as before', (_n, content, data, aps) => {
    const m = buildFcmMessage(push({ content: { channelId: 'news', ...content } }), NOW);
    expect(m.notification).toBeUndefined();
    expect(m.android).toEqual({ priority: 'HIGH', ttl: '2419200s', data });
    expect(m.apns.headers).toMatchObject({ 'apns-priority': '10', 'apns-push-type': 'alert' });
    expect(m.apns.payload.aps).toEqual(aps);
  });

  it('the push\'s own data keys win over herald_badge / herald_sound', () => {
    expect(buildFcmMessage(push({ content: { badge: 2, data: { herald_badge: 'mine' } } }), NOW).android['data']).toEqual({ herald_badge: 'mine' });
  });

  it('badge 0 is not sent as notification_count (0 is the launcher\'s default on Android, not "clear")', () => {
    const m = buildFcmMessage(push({ content: { title: 'T', badge: 0, sound: 'ping' } }), NOW);
    expect(m.android.notification).toEqual({ sound: 'ping' });
    expect(m.apns.payload.aps['badge']).toBe(0);
  });

  it("a critical alert reaches iOS through FCM with Apple's sound dictionary; Android keeps the sound's name", () => {
    const m = buildFcmMessage(push({ content: { title: 'Gas leak', sound: 'alarm', interruptionLevel: 'critical' } }), NOW);
    expect(m.apns.payload.aps['sound']).toEqual({ critical: 1, name: 'alarm' });
    expect(m.android.notification).toEqual({ sound: 'alarm' });
  });

  it('the iOS action category is not Android\'s click_action', () => {
    const m = buildFcmMessage(push({ content: { title: 'T', actionCategory: 'REPLY' } }), NOW);
    expect(m.android.notification).toBeUndefined();
    expect(m.apns.payload.aps['category']).toBe('REPLY');
  });

  it('merges the raw fcm override last', () => {
    const m = buildFcmMessage(push({ content: { body: 'b', fcm: { android: { direct_boot_ok: true, notification: { visibility: 'PUBLIC' } }, webpush: { headers: { Urgency: 'high' } } } } }), NOW);
    expect(m.android).toMatchObject({ direct_boot_ok: true, notification: { visibility: 'PUBLIC' }, priority: 'HIGH' });
    expect(m.webpush).toEqual({ headers: { Urgency: 'high' } });
  });
});

describe('fcmTtlFromNow (a message made before a wait for budget, sent later)', () => {
  it('makes it as buildFcmMessage would make it at the send, a ttl of content.fcm standing as it does there', () => {
    const later = new Date(NOW.getTime() + 42_000);
    const expiresAt = new Date(NOW.getTime() + 3_600_000).toISOString();
    for (const p of [
      push({ expiresAt }),
      push({ expiresAt, content: { body: 'b', fcm: { android: { direct_boot_ok: true } } } }),
      push({ expiresAt, content: { body: 'b', fcm: { android: { ttl: '60s' } } } }),
      push({ expiresAt, content: { body: 'b', fcm: { android: { ttl: null } } } }),
    ]) {
      const m = buildFcmMessage(p, NOW);
      fcmTtlFromNow(m, p, later);
      expect(m).toEqual(buildFcmMessage(p, later));
    }
    const restamped = buildFcmMessage(push({ expiresAt }), NOW);
    fcmTtlFromNow(restamped, push({ expiresAt }), later);
    expect(restamped.android.ttl).toBe('3558s');
  });
});
