import { derivePushId, type DevicePush } from '@herald/contracts';
import { describe, expect, it } from 'vitest';
import { buildApnsNotification } from './apns-notification.ts';

const push = (over: Partial<DevicePush>): DevicePush => ({
  version: 1,
  pushId: derivePushId('job', 'dev'),
  jobId: 'job',
  deviceId: 'dev',
  app: 'demo',
  platform: 'apns',
  token: 'ab'.repeat(32),
  userId: 'u',
  content: { title: 'Hi' },
  priority: 'high',
  acceptedAt: '2026-01-01T00:00:00Z',
  ...over,
});

describe('buildApnsNotification', () => {
  it('builds an alert with every content field, data at top level', () => {
    const p = push({
      content: { title: 'T', subtitle: 'S', body: 'B', badge: 0, sound: 'default', threadId: 'th', imageUrl: 'https://i.example/a.png', data: { k: 'v' } },
      collapseKey: 'c1',
      expiresAt: '2026-01-02T00:00:00.900Z',
    });
    expect(buildApnsNotification(p, 'com.example')).toEqual({
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

  it('uses priority 5 for normal pushes and expiration 0 without expiresAt', () => {
    const { headers } = buildApnsNotification(push({ priority: 'normal' }), 't');
    expect(headers).toMatchObject({ 'apns-priority': '5', 'apns-expiration': '0', 'apns-push-type': 'alert' });
    expect(headers['apns-collapse-id']).toBeUndefined();
  });

  it('sends content-available-only as background at priority 5 without badge or sound', () => {
    const n = buildApnsNotification(push({ content: { contentAvailable: true, badge: 1, sound: 'x' }, priority: 'high' }), 't');
    expect(n.headers).toMatchObject({ 'apns-push-type': 'background', 'apns-priority': '5' });
    expect(n.payload).toEqual({ aps: { 'content-available': 1 } });
  });

  it('keeps content-available on an alert push, which stays an alert', () => {
    const n = buildApnsNotification(push({ content: { body: 'b', contentAvailable: true } }), 't');
    expect(n.headers['apns-push-type']).toBe('alert');
    expect(n.payload).toEqual({ aps: { alert: { body: 'b' }, 'content-available': 1 } });
  });

  it('never lets data overwrite aps', () => {
    expect(buildApnsNotification(push({ content: { body: 'b', data: { aps: 'evil' } } }), 't').payload).toEqual({ aps: { alert: { body: 'b' } } });
  });
});
