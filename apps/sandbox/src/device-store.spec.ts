import { describe, expect, it } from 'vitest';
import { DeviceStore, type AcceptedPush } from './device-store.ts';

const T0 = Date.UTC(2030, 0, 1);
let seq = 0;

function apnsPush(token: string, over: Partial<AcceptedPush> & { expiration?: string; topic?: string } = {}): AcceptedPush {
  const { expiration, topic, ...rest } = over;
  seq += 1;
  return {
    platform: 'apns',
    token,
    recordSeq: seq,
    receivedAtMs: T0,
    headers: { 'apns-topic': topic ?? 'com.a', ...(expiration !== undefined ? { 'apns-expiration': expiration } : {}), authorization: 'bearer x' },
    rawBody: JSON.stringify({ aps: { alert: `push ${seq}` } }),
    ...rest,
  };
}

const fcmPush = (token: string, android: Record<string, unknown>, receivedAtMs = T0): AcceptedPush => ({
  platform: 'fcm',
  token,
  recordSeq: ++seq,
  receivedAtMs,
  headers: {},
  rawBody: JSON.stringify({ message: { token, android } }),
});

function clock(start = T0): { now: () => number; set: (ms: number) => void } {
  let t = start;
  return { now: () => t, set: (ms) => (t = ms) };
}

describe('DeviceStore', () => {
  it('delivers at once to an online token, without the authorization header', () => {
    const store = new DeviceStore();
    expect(store.accept(apnsPush('a', { expiration: '0' }))).toBe('delivered');
    const [d] = store.deliveries({ token: 'a' });
    expect(d).toMatchObject({ seq: 1, platform: 'apns', token: 'a', via: 'direct', receivedAt: new Date(T0).toISOString(), deliveredAt: new Date(T0).toISOString() });
    expect(d?.headers).toEqual({ 'apns-topic': 'com.a', 'apns-expiration': '0' });
    expect(d?.body).toEqual({ aps: { alert: expect.any(String) } });
  });

  it('APNs offline: drops expiration 0, keeps only the newest per topic, delivers it when back online', () => {
    const c = clock();
    const store = new DeviceStore(100, c.now);
    store.goOffline('apns', 'a');
    expect(store.accept(apnsPush('a', { expiration: '0' }))).toBe('discarded');
    const older = apnsPush('a', { expiration: String(T0 / 1000 + 3600) });
    const newer = apnsPush('a', { expiration: String(T0 / 1000 + 3600) });
    const otherApp = apnsPush('a', { topic: 'com.b' });
    for (const p of [older, newer, otherApp]) expect(store.accept(p)).toBe('stored');
    expect(store.deliveries()).toEqual([]);
    c.set(T0 + 60_000);
    expect(store.goOnline('apns', 'a').map((d) => d.recordSeq)).toEqual([newer.recordSeq, otherApp.recordSeq]);
    expect(store.deliveries({ token: 'a' })).toMatchObject([
      { via: 'stored', deliveredAt: new Date(T0 + 60_000).toISOString(), receivedAt: new Date(T0).toISOString() },
      { via: 'stored' },
    ]);
    expect(store.isOnline('apns', 'a')).toBe(true);
  });

  it('does not deliver stored pushes that expired while the phone was away', () => {
    const c = clock();
    const store = new DeviceStore(100, c.now);
    store.goOffline('fcm', 'f');
    expect(store.accept(fcmPush('f', { ttl: '60s' }))).toBe('stored');
    expect(store.accept(fcmPush('f', { ttl: '3600s' }))).toBe('stored');
    c.set(T0 + 120_000);
    expect(store.goOnline('fcm', 'f')).toHaveLength(1);
  });

  it('FCM offline: ttl 0s is dropped; collapse keys replace; no ttl keeps 4 weeks', () => {
    const c = clock();
    const store = new DeviceStore(100, c.now);
    store.goOffline('fcm', 'f');
    expect(store.accept(fcmPush('f', { ttl: '0s' }))).toBe('discarded');
    store.accept(fcmPush('f', { collapse_key: 'score' }));
    const latest = fcmPush('f', { collapse_key: 'score' });
    store.accept(latest);
    const plain = fcmPush('f', {});
    store.accept(plain);
    c.set(T0 + 27 * 86_400_000);
    expect(store.goOnline('fcm', 'f').map((d) => d.recordSeq)).toEqual([latest.recordSeq, plain.recordSeq]);
  });

  it('FCM to an iOS phone follows apns-expiration', () => {
    const store = new DeviceStore(100, () => T0);
    store.goOffline('fcm', 'i', 'ios');
    const body = (e: string) => JSON.stringify({ message: { token: 'i', android: { ttl: '0s' }, apns: { headers: { 'apns-expiration': e } } } });
    expect(store.accept({ ...fcmPush('i', {}), rawBody: body('0') })).toBe('discarded');
    expect(store.accept({ ...fcmPush('i', {}), rawBody: body(String(T0 / 1000 + 60)) })).toBe('stored');
  });

  it('going offline twice keeps what is stored; clear() forgets everything', () => {
    const store = new DeviceStore(100, () => T0);
    store.goOffline('apns', 'a');
    store.accept(apnsPush('a'));
    store.goOffline('apns', 'a');
    expect(store.goOnline('apns', 'a')).toHaveLength(1);
    store.goOffline('apns', 'a');
    store.clear();
    expect(store.isOnline('apns', 'a')).toBe(true);
    expect(store.deliveries()).toEqual([]);
  });

  it('keeps the most recent deliveries within capacity and filters by platform and token', () => {
    const store = new DeviceStore(2);
    store.accept(apnsPush('a'));
    store.accept(fcmPush('b', {}));
    store.accept(apnsPush('a'));
    expect(store.deliveries().map((d) => d.seq)).toEqual([2, 3]);
    expect(store.deliveries({ platform: 'apns', token: 'a' }).map((d) => d.seq)).toEqual([3]);
  });
});
