import { derivePushId, type DevicePush } from '@herald/contracts';
import { describe, expect, it } from 'vitest';
import { buildFcmMessage } from './fcm-message.ts';

const NOW = new Date('2026-01-01T00:00:00Z');
const push = (over: Partial<DevicePush>): DevicePush => ({
  version: 1,
  pushId: derivePushId('job', 'dev'),
  jobId: 'job',
  deviceId: 'dev',
  app: 'demo',
  platform: 'fcm',
  token: 'fcm-token',
  userId: 'u',
  content: { title: 'Hi' },
  priority: 'high',
  acceptedAt: '2026-01-01T00:00:00Z',
  ...over,
});

describe('buildFcmMessage', () => {
  it('maps every content field to firebase-admin\'s Message', () => {
    const p = push({
      content: { title: 'T', body: 'B', badge: 4, sound: 'default', threadId: 'th', imageUrl: 'https://i.example/a.png', data: { k: 'v' } },
      collapseKey: 'c1',
      expiresAt: '2026-01-01T01:00:00.700Z',
    });
    expect(buildFcmMessage(p, NOW)).toEqual({
      token: 'fcm-token',
      notification: { title: 'T', body: 'B', imageUrl: 'https://i.example/a.png' },
      data: { k: 'v' },
      android: { priority: 'high', ttl: 3600_000, collapseKey: 'c1', notification: { sound: 'default', notificationCount: 4 } },
      apns: {
        headers: { 'apns-priority': '10', 'apns-push-type': 'alert', 'apns-expiration': String(Date.UTC(2026, 0, 1, 1) / 1000), 'apns-collapse-id': 'c1' },
        payload: { aps: { badge: 4, sound: 'default', threadId: 'th', mutableContent: true } },
      },
    });
  });

  it('sends data-only for a background push, normal priority, ttl never negative', () => {
    const p = push({ content: { contentAvailable: true, data: { s: '1' } }, priority: 'normal', expiresAt: '2025-12-31T00:00:00Z' });
    expect(buildFcmMessage(p, NOW)).toEqual({
      token: 'fcm-token',
      data: { s: '1' },
      android: { priority: 'normal', ttl: 0 },
      apns: {
        headers: { 'apns-priority': '5', 'apns-push-type': 'background', 'apns-expiration': String(Date.UTC(2025, 11, 31) / 1000) },
        payload: { aps: { contentAvailable: true } },
      },
    });
  });
});
