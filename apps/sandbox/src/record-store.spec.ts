import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@herald/logging';
import { RecordStore } from './record-store.ts';
import { createControlServer, routeControl, waitForCount } from './control-server.ts';
import type { SandboxContext } from './exchange.ts';

const rec = (platform: 'apns' | 'fcm', token: string, status: number) => ({
  platform, token, status, receivedAt: 'now', path: '/p', headers: {}, rawBody: '{"a":1}', responseHeaders: {}, rawResponse: '', clientClosed: false, warnings: [],
});

describe('RecordStore', () => {
  it('keeps the most recent records within capacity but counts all', () => {
    const s = new RecordStore(3);
    for (let i = 0; i < 5; i++) s.add(rec('apns', `t${i}`, i < 4 ? 200 : 410));
    expect(s.query().map((r) => r.seq)).toEqual([3, 4, 5]);
    expect(s.getStats()).toEqual({
      total: 5,
      byPlatform: { apns: { total: 5, byStatus: { '200': 4, '410': 1 } } },
      fcmConnections: { direct: 0, filtered: 0 },
      warned: { total: 0, first: [] },
    });
  });

  it('counts requests answered 2xx with warnings past the ring, keeping the first ten', () => {
    const s = new RecordStore(3);
    for (let i = 0; i < 15; i++) s.add({ ...rec('apns', `t${i}`, 200), warnings: i % 3 === 0 ? [] : [`warning ${i}`] });
    const { warned } = s.getStats();
    expect(warned.total).toBe(10);
    expect(warned.first.map((w) => [w.seq, w.warnings])).toEqual(
      [1, 2, 4, 5, 7, 8, 10, 11, 13, 14].map((i) => [i + 1, [`warning ${i}`]]),
    );
    s.add({ ...rec('fcm', 'late', 200), warnings: ['late'] });
    // A refused request's reason (the web sandbox gives it as a warning): its sender sees the refusal.
    s.add({ ...rec('fcm', 'refused', 410), warnings: ['push subscription has unsubscribed or expired'] });
    expect(s.getStats().warned).toMatchObject({ total: 11 });
    expect(s.getStats().warned.first).toHaveLength(10);
    // DELETE /records forgets the records and counters, not what was warned about.
    s.clear();
    expect(s.getStats()).toMatchObject({ total: 0, warned: { total: 11 } });
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

  it('counted answers once that many requests of a status have been counted, every platform together', async () => {
    const s = new RecordStore(2);
    s.add(rec('apns', 'a', 200));
    s.add(rec('apns', 'b', 410));
    let answered: number | undefined;
    const waiting = s.counted(3, 10_000, 200).then((n) => (answered = n));
    s.add(rec('fcm', 'c', 200));
    s.add(rec('fcm', 'd', 400));
    await Promise.resolve();
    expect(answered).toBeUndefined();
    s.add(rec('apns', 'e', 200));
    expect(await waiting).toBe(3);
    expect(await s.counted(3, 10_000, 200)).toBe(3);
    expect(await s.counted(5, 10_000)).toBe(5);
  });

  it('counted answers with the count it has when its time is up', async () => {
    const s = new RecordStore();
    s.add(rec('apns', 'a', 200));
    const started = Date.now();
    expect(await s.counted(2, 30, 200)).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    s.add(rec('apns', 'b', 200));
    expect(s.countOf(200)).toBe(2);
  });

  it('GET /stats/wait answers { count, reached } and 400 naming a parameter it cannot read', async () => {
    const s = new RecordStore();
    s.add(rec('fcm', 'a', 200));
    const wait = async (query: string) => {
      const answer = await waitForCount(new URL(`http://sandbox/stats/wait?${query}`).searchParams, s);
      return { status: answer.status, body: JSON.parse(answer.body) as Record<string, unknown> };
    };
    expect(await wait('atLeast=1&status=200')).toEqual({ status: 200, body: { count: 1, reached: true } });
    expect(await wait('atLeast=2&status=200&timeoutMs=10')).toEqual({ status: 200, body: { count: 1, reached: false } });
    expect((await wait('status=200')).body.error).toMatch(/^atLeast:/);
    expect((await wait('atLeast=1&timeoutMs=600001')).body.error).toMatch(/^timeoutMs:/);
    expect((await wait('atLeast=1&status=2000')).status).toBe(400);
    expect((await wait('atLeast=1&status=x')).body.error).toMatch(/^status:/);
  });

  it('GET /stats/stream sends the counts at once, then a line each interval in which they changed, until the client goes', async () => {
    const s = new RecordStore();
    s.add(rec('apns', 'a', 200));
    const server = createControlServer({ records: s, logger: createLogger({ service: 'stream-spec', level: 'silent' }) } as unknown as SandboxContext);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const lines: Array<{ total: number; byStatus: Record<string, number> }> = [];
    const lineArrived = (n: number): Promise<void> =>
      new Promise((resolve, reject) => {
        const started = Date.now();
        const check = (): void => (lines.length >= n ? resolve() : Date.now() - started > 2000 ? reject(new Error(`${lines.length} lines, wanted ${n}`)) : void setTimeout(check, 5));
        check();
      });
    const req = http.get(`${base}/stats/stream?everyMs=20`, (res) => {
      expect(res.statusCode).toBe(200);
      let rest = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const parts = (rest + chunk).split('\n');
        rest = parts.pop() ?? '';
        for (const p of parts) lines.push(JSON.parse(p) as (typeof lines)[number]);
      });
    });
    req.on('error', () => undefined);
    await lineArrived(1);
    expect(lines[0]).toEqual({ total: 1, byStatus: { '200': 1 } });
    s.add(rec('fcm', 'b', 200));
    s.add(rec('fcm', 'c', 410));
    await lineArrived(2);
    expect(lines[1]).toEqual({ total: 3, byStatus: { '200': 2, '410': 1 } });
    await new Promise((r) => setTimeout(r, 100));
    expect(lines).toHaveLength(2);
    req.destroy();
    // The server closes only once the stream's connection is gone.
    await new Promise<void>((resolve, reject) => server.close((err) => (err === undefined ? resolve() : reject(err))));
  });

  it('GET /stats/stream answers 400 naming everyMs when it is out of range', async () => {
    const server = createControlServer({ records: new RecordStore(), logger: createLogger({ service: 'stream-spec', level: 'silent' }) } as unknown as SandboxContext);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/stats/stream?everyMs=5`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(/^everyMs:/);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
