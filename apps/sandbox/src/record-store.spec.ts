import { describe, expect, it } from 'vitest';
import { RecordStore } from './record-store.ts';

const rec = (platform: 'apns' | 'fcm', token: string, status: number) => ({
  platform, token, status, receivedAt: 'now', path: '/p', headers: {}, rawBody: '{"a":1}', responseHeaders: {}, rawResponse: '', clientClosed: false, warnings: [],
});

describe('RecordStore', () => {
  it('keeps the most recent records within capacity but counts all', () => {
    const s = new RecordStore(3);
    for (let i = 0; i < 5; i++) s.add(rec('apns', `t${i}`, i < 4 ? 200 : 410));
    expect(s.query().map((r) => r.seq)).toEqual([3, 4, 5]);
    expect(s.getStats()).toEqual({ total: 5, byPlatform: { apns: { total: 5, byStatus: { '200': 4, '410': 1 } } }, fcmConnections: { direct: 0, filtered: 0 } });
  });

  it('filters by platform, token, after and limit, and parses bodies', () => {
    const s = new RecordStore();
    s.add(rec('apns', 'a', 200));
    s.add(rec('fcm', 'a', 200));
    s.add(rec('fcm', 'b', 200));
    s.add(rec('fcm', 'a', 200));
    expect(s.query({ platform: 'fcm', token: 'a' }).map((r) => r.seq)).toEqual([2, 4]);
    expect(s.query({ limit: 1 }).map((r) => r.seq)).toEqual([4]);
    expect(s.query({ afterSeq: 2 }).map((r) => r.seq)).toEqual([3, 4]);
    expect(s.query({ limit: 1 })[0]).toMatchObject({ body: { a: 1 }, response: null });
  });
});
