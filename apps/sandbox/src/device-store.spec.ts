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

const fcmPush = (token: string, android: Record<string, unknown>, receivedAtMs = T0, message: Record<string, unknown> = {}): AcceptedPush => ({
  platform: 'fcm',
  token,
  recordSeq: ++seq,
  receivedAtMs,
  headers: {},
  rawBody: JSON.stringify({ message: { token, android, ...message } }),
});
const alert = (token: string, collapseKey: string) => fcmPush(token, { collapse_key: collapseKey }, T0, { notification: { title: collapseKey } });
const dataPush = (token: string, android: Record<string, unknown> = {}) => fcmPush(token, android, T0, { data: { n: String(seq) } });

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
    expect(store.goOnline('apns', 'a').pushes.map((d) => d.recordSeq)).toEqual([newer.recordSeq, otherApp.recordSeq]);
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
    expect(store.goOnline('fcm', 'f').pushes).toHaveLength(1);
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
    expect(store.goOnline('fcm', 'f').pushes.map((d) => d.recordSeq)).toEqual([latest.recordSeq, plain.recordSeq]);
  });

  it('FCM offline (Android): notification messages are always collapsible, one kept whatever their collapse_key', () => {
    const store = new DeviceStore(1000, () => T0);
    store.goOffline('fcm', 'f');
    const alerts = [alert('f', 'a'), alert('f', 'b'), alert('f', 'c')];
    for (const p of alerts) expect(store.accept(p)).toBe('stored');
    const { pushes } = store.goOnline('fcm', 'f');
    expect(pushes.map((d) => [d.recordSeq, d.via])).toEqual([[alerts[2]?.recordSeq, 'stored']]);
    expect(pushes[0]?.why).toMatch(/notification message: always collapsible, collapse_key ignored/);
    expect(store.discards({ token: 'f' }).map((d) => [d.recordSeq, d.why])).toEqual(
      alerts.slice(0, 2).map((p) => [p.recordSeq, expect.stringMatching(/^replaced by a newer push: notification message/)]),
    );
  });

  it('FCM offline (Android): four collapse keys at most, a fifth drops the oldest key\'s message', () => {
    const store = new DeviceStore(1000, () => T0);
    store.goOffline('fcm', 'f');
    const keyed = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'].map((k) => dataPush('f', { collapse_key: k }));
    for (const p of keyed) store.accept(p);
    const plain = dataPush('f');
    store.accept(plain);
    expect(store.goOnline('fcm', 'f').pushes.map((d) => d.recordSeq)).toEqual([...keyed.slice(2), plain].map((p) => p.recordSeq));
    expect(store.discards({ token: 'f' })).toEqual(
      keyed.slice(0, 2).map((p) => expect.objectContaining({ recordSeq: p.recordSeq, why: expect.stringMatching(/beyond FCM's four per device/) })),
    );
  });

  it('FCM offline (Android): the 101st non-collapsible message discards everything stored; back online, the phone is told first', () => {
    const store = new DeviceStore(1000, () => T0);
    store.goOffline('fcm', 'f');
    const keyed = dataPush('f', { collapse_key: 'score' });
    store.accept(keyed);
    const hundred = Array.from({ length: 100 }, () => dataPush('f'));
    for (const p of hundred) expect(store.accept(p)).toBe('stored');
    expect(store.accept(dataPush('f'))).toBe('discarded');
    expect(store.discards({ token: 'f' })).toHaveLength(102);
    expect(store.discards({ token: 'f' }).every((d) => /limit of 100 non-collapsible messages reached/.test(d.why))).toBe(true);
    const after = dataPush('f');
    expect(store.accept(after)).toBe('stored');
    const back = store.goOnline('fcm', 'f');
    expect(back).toMatchObject({ deletedNotice: true, pushes: [{ recordSeq: after.recordSeq, via: 'stored' }] });
    expect(store.deliveries({ token: 'f' }).map((d) => [d.via, d.body])).toEqual([
      ['deleted-messages', { message_type: 'deleted_messages' }],
      ['stored', expect.anything()],
    ]);
    store.goOffline('fcm', 'f');
    expect(store.goOnline('fcm', 'f')).toEqual({ pushes: [], deletedNotice: false });
  });

  it('FCM offline (Android): 3 alerts, 6 collapse keys and 120 data messages do not all arrive', () => {
    const store = new DeviceStore(1000, () => T0);
    store.goOffline('fcm', 'f');
    for (const k of ['a', 'b', 'c']) store.accept(alert('f', k));
    for (const k of ['k1', 'k2', 'k3', 'k4', 'k5', 'k6']) store.accept(dataPush('f', { collapse_key: k }));
    const data = Array.from({ length: 120 }, () => dataPush('f'));
    for (const p of data) store.accept(p);
    const back = store.goOnline('fcm', 'f');
    expect(back.deletedNotice).toBe(true);
    expect(back.pushes.map((d) => d.recordSeq)).toEqual(data.slice(101).map((p) => p.recordSeq));
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
    expect(store.goOnline('apns', 'a').pushes).toHaveLength(1);
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
