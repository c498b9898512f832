import { describe, expect, it } from 'vitest';
import { RecordStore } from './record-store.ts';
import { routeControl } from './control-server.ts';

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

  it('after a full ring has wrapped, `after` gives exactly the newer records still kept, oldest first', () => {
    const s = new RecordStore(4);
    for (let i = 0; i < 10; i++) s.add(rec('apns', `t${i}`, 200));
    expect(s.query({ afterSeq: 7 }).map((r) => r.seq)).toEqual([8, 9, 10]);
    expect(s.query({ afterSeq: 2 }).map((r) => r.seq)).toEqual([7, 8, 9, 10]);
    expect(s.query({ afterSeq: 10 })).toEqual([]);
    s.clear();
    s.add(rec('fcm', 'x', 200));
    expect(s.query({ afterSeq: 10 }).map((r) => r.seq)).toEqual([11]);
  });

  it('gives only the fields asked for, parsing the body only when it is one of them', () => {
    const s = new RecordStore();
    s.add(rec('apns', 'a', 200));
    s.add({ ...rec('fcm', 'b', 200), rawBody: '{"message":{"data":{"t":"5"}}}' });
    expect(s.queryFields({ afterSeq: 1 }, ['seq', 'status', 'token', 'body'])).toEqual([{ seq: 2, status: 200, token: 'b', body: { message: { data: { t: '5' } } } }]);
    expect(s.queryFields({}, ['seq'])).toEqual([{ seq: 1 }, { seq: 2 }]);
  });

  it('GET /records?fields= answers 400 naming a field no record has', () => {
    const s = new RecordStore();
    s.add(rec('apns', 'a', 200));
    const ctx = { records: s } as unknown as Parameters<typeof routeControl>[3];
    const get = (query: string) => routeControl('GET', new URL(`http://sandbox/records?${query}`), Buffer.alloc(0), ctx);
    expect(JSON.parse(get('fields=seq,status').body)).toEqual([{ seq: 1, status: 200 }]);
    const bad = get('fields=seq,bogus');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error).toMatch(/"bogus"/);
  });
});
