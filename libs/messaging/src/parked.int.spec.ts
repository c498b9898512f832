import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connect, type Channel } from 'amqplib';
import { handledBefore, HeraldHeaders } from './headers.ts';
import { findParked, listParked, ParkedSweepStopped, purgeParked, replayParked, ReplayError } from './parked.ts';
import { silentLogger, startTestBroker, takeMessage, type TestBroker } from './test-helpers.ts';
import { workQueueTopology } from './topology.ts';

async function withChannel<T>(work: (ch: Channel) => Promise<T>): Promise<T> {
  const conn = await connect(url);
  try {
    return await work(await conn.createChannel());
  } finally {
    await conn.close();
  }
}
let url = '';

describe('parked messages: list, replay, purge', () => {
  let t: TestBroker;
  const opts = () => ({ url: t.vhost.amqpUrl, logger: silentLogger, queue: 'p.work' });
  beforeAll(async () => {
    t = await startTestBroker('msg-parked');
    url = t.vhost.amqpUrl;
    await t.broker.applyTopology(workQueueTopology('p.work', 'p.exchange'));
  });
  afterAll(() => t.teardown());
  beforeEach(async () => {
    for (const queue of ['p.work', 'p.work.parked']) await withChannel((ch) => ch.purgeQueue(queue));
  });

  /** A parked copy exactly as the Settler writes it. */
  const park = (id: string, code: string, originalQueue = 'p.work', body = Buffer.from(`body-${id}`), noted: Record<string, string> = {}) =>
    t.broker.publisher.publish({
      exchange: '',
      routingKey: 'p.work.parked',
      body,
      messageId: id,
      headers: {
        ...noted,
        'x-keep': 'me',
        [HeraldHeaders.parkedReason]: `because ${code}`,
        [HeraldHeaders.parkedCode]: code,
        [HeraldHeaders.parkedAt]: '2026-01-01T00:00:00.000Z',
        [HeraldHeaders.originalQueue]: originalQueue,
        [HeraldHeaders.attempt]: 3,
      },
    });
  /** Exact depth from the broker (the management API's numbers lag). */
  const depth = async (queue: string) => (await withChannel((ch) => ch.checkQueue(queue))).messageCount;

  it('lists every parked message with why it is there, and leaves them parked', async () => {
    await park('a', 'schema');
    await park('b', 'retries-exhausted');
    const listed = (await listParked(opts())).messages;
    expect(listed.map((m) => [m.messageId, m.code, m.reason, m.originalQueue, m.attempt])).toEqual([
      ['a', 'schema', 'because schema', 'p.work', 3],
      ['b', 'retries-exhausted', 'because retries-exhausted', 'p.work', 3],
    ]);
    expect(listed[0]?.body.toString()).toBe('body-a');
    expect((await listParked({ ...opts(), queue: 'p.work.parked' })).messages.length).toBe(2);
    expect(await depth('p.work.parked')).toBe(2);
  });

  it('replays one message by id to its original queue once, attempt reset, parking headers removed', async () => {
    await park('a', 'retries-exhausted');
    await park('b', 'retries-exhausted');
    expect(await replayParked({ ...opts(), filter: { kind: 'id', id: 'b' } })).toEqual({ seen: 2, replayed: 1, refused: [] });
    const moved = await takeMessage(t.vhost.amqpUrl, 'p.work');
    if (moved === false) throw new Error('nothing replayed');
    expect(moved.properties.messageId).toBe('b');
    const headers: Record<string, unknown> = moved.properties.headers ?? {};
    expect(headers[HeraldHeaders.attempt]).toBe(1);
    expect(headers['x-keep']).toBe('me');
    for (const h of [HeraldHeaders.parkedReason, HeraldHeaders.parkedCode, HeraldHeaders.originalQueue]) expect(headers[h]).toBeUndefined();
    // Marked replayed: a handler can tell a message it may have worked on before.
    expect(handledBefore({ redelivered: false, headers })).toBe(true);
    expect(await takeMessage(t.vhost.amqpUrl, 'p.work')).toBe(false);
    expect((await listParked(opts())).messages.map((m) => m.messageId)).toEqual(['a']);
  });

  it('replays by code with progress, and replays all', async () => {
    for (let i = 0; i < 150; i++) await park(`t${i}`, i % 3 === 0 ? 'transient' : 'unknown-app');
    const progress: number[] = [];
    const byCode = await replayParked({ ...opts(), filter: { kind: 'code', code: 'transient' }, onProgress: (p) => progress.push(p.seen) });
    expect(byCode).toEqual({ seen: 150, replayed: 50, refused: [] });
    expect(progress).toEqual([100, 150]);
    expect(await depth('p.work')).toBe(50);
    expect(await depth('p.work.parked')).toBe(100);
    expect(await replayParked({ ...opts(), filter: { kind: 'all' } })).toEqual({ seen: 100, replayed: 100, refused: [] });
    expect(await depth('p.work')).toBe(150);
    expect(await depth('p.work.parked')).toBe(0);
  });

  it('by id, a show or replay stops looking once it has the message; a purge reads on to delete every copy', async () => {
    await Promise.all(Array.from({ length: 250 }, (_, i) => park(`m${i}`, 'retries-exhausted')));
    const progress: number[] = [];
    expect(await replayParked({ ...opts(), filter: { kind: 'id', id: 'm7' }, onProgress: (p) => progress.push(p.seen) })).toEqual({ seen: 100, replayed: 1, refused: [] });
    expect(progress).toEqual([100]);
    // A copy of m120 parked again beside it: both go.
    await park('m120', 'retries-exhausted');
    expect(await purgeParked({ ...opts(), filter: { kind: 'id', id: 'm120' } })).toEqual({ seen: 250, purged: 2 });
    expect((await findParked({ ...opts(), messageId: 'm8' }))?.body.toString()).toBe('body-m8');
    expect(await findParked({ ...opts(), messageId: 'm7' })).toBeUndefined();
    // One not there is looked for to the end.
    expect(await purgeParked({ ...opts(), filter: { kind: 'id', id: 'nope' } })).toEqual({ seen: 248, purged: 0 });
    expect(await depth('p.work.parked')).toBe(248);
    expect(await depth('p.work')).toBe(1);
  });

  it('purges by code or all', async () => {
    await park('a', 'schema');
    await park('b', 'unknown-app');
    await park('c', 'schema');
    expect(await purgeParked({ ...opts(), filter: { kind: 'code', code: 'schema' } })).toEqual({ seen: 3, purged: 2 });
    expect((await listParked(opts())).messages.map((m) => m.messageId)).toEqual(['b']);
    expect(await purgeParked({ ...opts(), filter: { kind: 'all' } })).toEqual({ seen: 1, purged: 1 });
    expect(await depth('p.work.parked')).toBe(0);
  });

  // An operator who fixed one app's credentials replays or purges that app's parked pushes, not every app's.
  it("reads the app a parked body names, and replays or purges one app's messages, by code or all", async () => {
    const of = (app: string) => Buffer.from(JSON.stringify({ app, pushId: 'x' }));
    await park('a1', 'provider-rejected', 'p.work', of('shop'));
    await park('b1', 'provider-rejected', 'p.work', of('chat'));
    await park('a2', 'retries-exhausted', 'p.work', of('shop'));
    await park('n1', 'schema');
    expect((await listParked(opts())).messages.map((m) => [m.messageId, m.app])).toEqual([['a1', 'shop'], ['b1', 'chat'], ['a2', 'shop'], ['n1', undefined]]);
    expect(await purgeParked({ ...opts(), filter: { kind: 'code', code: 'provider-rejected', app: 'shop' } })).toEqual({ seen: 4, purged: 1 });
    expect(await replayParked({ ...opts(), filter: { kind: 'all', app: 'shop' } })).toMatchObject({ replayed: 1 });
    expect((await listParked(opts())).messages.map((m) => m.messageId)).toEqual(['b1', 'n1']);
    expect(await purgeParked({ ...opts(), filter: { kind: 'all', app: 'chat' } })).toEqual({ seen: 2, purged: 1 });
    expect((await listParked(opts())).messages.map((m) => m.messageId)).toEqual(['n1']);
  });

  // Team A's receiver was fixed and A asks for its deliveries: `--app A` matched nothing (a webhook
  // delivery's body names no app), and `--code retries-exhausted` alone replayed every team's.
  it("reads a webhook delivery's team and subscription, and lists or replays one team's or one subscription's", async () => {
    const [s1, s2, s3] = [randomUUID(), randomUUID(), randomUUID()];
    const delivery = (subscriptionId: string) => Buffer.from(JSON.stringify({ notificationId: randomUUID(), subscriptionId, diff: {} }));
    /** Parked as the webhook pusher parks it: its subscription's team and id in headers. */
    const parkDelivery = (id: string, code: string, team: string, subscriptionId: string) =>
      park(id, code, 'p.work', delivery(subscriptionId), { [HeraldHeaders.team]: team, [HeraldHeaders.subscription]: subscriptionId });
    await parkDelivery('a1-out', 'retries-exhausted', 'team-a', s1);
    await parkDelivery('b2-out', 'retries-exhausted', 'team-b', s2);
    await parkDelivery('a1-401', 'receiver-rejected', 'team-a', s1);
    await parkDelivery('a3-out', 'retries-exhausted', 'team-a', s3);
    // Parked before the pusher named its owner: no team, its subscription read from its body.
    await park('a1-old', 'retries-exhausted', 'p.work', delivery(s1));
    const ids = (messages: readonly { messageId: string | undefined }[]) => messages.map((m) => m.messageId).sort();

    const listed = (await listParked(opts())).messages;
    expect(listed.map((m) => [m.messageId, m.app, m.subscriptionId])).toEqual([
      ['a1-out', 'team-a', s1],
      ['b2-out', 'team-b', s2],
      ['a1-401', 'team-a', s1],
      ['a3-out', 'team-a', s3],
      ['a1-old', undefined, s1],
    ]);
    expect(ids((await listParked({ ...opts(), filter: { kind: 'all', app: 'team-a' } })).messages)).toEqual(['a1-401', 'a1-out', 'a3-out']);
    expect(ids((await listParked({ ...opts(), filter: { kind: 'all', subscription: s1 } })).messages)).toEqual(['a1-401', 'a1-old', 'a1-out']);
    expect(ids((await listParked({ ...opts(), filter: { kind: 'all', app: 'team-a', subscription: s3 } })).messages)).toEqual(['a3-out']);

    // The runbook's replay: only S1's retries-exhausted; its 401 is refused without --force, and no other subscription's moves.
    const replayed = await replayParked({ ...opts(), filter: { kind: 'code', code: 'retries-exhausted', subscription: s1 } });
    expect(replayed).toEqual({ seen: 5, replayed: 2, refused: [] });
    expect(ids((await listParked(opts())).messages)).toEqual(['a1-401', 'a3-out', 'b2-out']);
    const back = [await takeMessage(url, 'p.work'), await takeMessage(url, 'p.work'), await takeMessage(url, 'p.work')];
    expect(back.map((m) => (m === false ? false : m.properties.messageId)).sort()).toEqual(['a1-old', 'a1-out', false]);
    // The replayed copy keeps whose it is: parked again, it is still S1's.
    expect(back.find((m) => m !== false && m.properties.messageId === 'a1-out')).toMatchObject({ properties: { headers: { [HeraldHeaders.team]: 'team-a', [HeraldHeaders.subscription]: s1 } } });
    // Team A's own 401 taken with --force, scoped by app; team B's stays.
    expect(await replayParked({ ...opts(), filter: { kind: 'all', app: 'team-a' }, force: true })).toEqual({ seen: 3, replayed: 2, refused: [] });
    expect(ids((await listParked(opts())).messages)).toEqual(['b2-out']);
    // A purge by subscription takes only that subscription's, not the whole queue at once.
    await parkDelivery('a1-again', 'retries-exhausted', 'team-a', s1);
    expect(await purgeParked({ ...opts(), filter: { kind: 'all', subscription: s1 } })).toEqual({ seen: 2, purged: 1 });
    expect(ids((await listParked(opts())).messages)).toEqual(['b2-out']);
  });

  // The runbook's preview: one app's recent parks queued behind a thousand older parks of another app.
  // Filtering only the first `limit` read listed none of them, while a replay with that filter took them all.
  it("lists an app's or an age's matches found beyond the first `limit` messages", async () => {
    const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
    const push = (app: string, acceptedAt: string) => Buffer.from(JSON.stringify({ app, pushId: 'x', acceptedAt }));
    await Promise.all(Array.from({ length: 1005 }, (_, i) => park(`old${i}`, 'app-banned', 'p.work', push('acme', hoursAgo(30)))));
    for (let i = 0; i < 5; i++) await park(`new${i}`, 'provider-rejected', 'p.work', push('shop', hoursAgo(1)));
    const recent = ['new0', 'new1', 'new2', 'new3', 'new4'];
    const progress: Array<{ seen: number; total: number; matched: number }> = [];
    const ofShop = await listParked({ ...opts(), filter: { kind: 'all', app: 'shop' }, limit: 1000, onProgress: (p) => progress.push(p) });
    expect([ofShop.messages.map((m) => m.messageId), ofShop.seen, ofShop.total]).toEqual([recent, 1010, 1010]);
    // Told as it reads (the CLI's progress on stderr), chunk by chunk, up to the whole queue.
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.at(-1)).toEqual({ seen: 1010, total: 1010, matched: 5 });
    // What a list read goes back to the queue, not always in the same order: compared sorted.
    const young = await listParked({ ...opts(), filter: { kind: 'all', newerThanMs: 6 * 3_600_000 }, limit: 1000 });
    expect(young.messages.map((m) => m.messageId).sort()).toEqual(recent);
    expect(await depth('p.work.parked')).toBe(1010);
  });

  it('stops reading at the `limit`-th match, and says how many it looked at of how many', async () => {
    const of = (app: string) => Buffer.from(JSON.stringify({ app, pushId: 'x' }));
    await Promise.all(Array.from({ length: 25 }, (_, i) => park(`old${i}`, 'app-banned', 'p.work', of('acme'))));
    for (let i = 0; i < 5; i++) await park(`new${i}`, 'provider-rejected', 'p.work', of('shop'));
    const firstTwo = await listParked({ ...opts(), filter: { kind: 'code', code: 'provider-rejected' }, limit: 2 });
    expect([firstTwo.messages.map((m) => m.messageId), firstTwo.seen, firstTwo.total]).toEqual([['new0', 'new1'], 27, 30]);
    expect(await depth('p.work.parked')).toBe(30);
  });

  it('replays only pushes younger than --newer-than, counted from when they were due (else accepted, else parked); purges the older ones', async () => {
    const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
    const push = (fields: object) => Buffer.from(JSON.stringify({ app: 'shop', pushId: 'x', ...fields }));
    await park('fresh', 'provider-rejected', 'p.work', push({ acceptedAt: hoursAgo(30), dueAt: hoursAgo(1) }));
    await park('stale', 'provider-rejected', 'p.work', push({ acceptedAt: hoursAgo(50) }));
    await park('day-old', 'provider-rejected', 'p.work', push({ acceptedAt: hoursAgo(24) }));
    await park('undated', 'provider-rejected'); // parked at 2026-01-01 (the headers), its body names no push
    // A job's acceptedAt is not when its pushes are due: it counts from when it was parked.
    await park('job', 'schema', 'p.work', Buffer.from(JSON.stringify({ id: 'j', app: 'shop', acceptedAt: hoursAgo(1) })));
    expect((await listParked(opts())).messages.map((m) => [m.messageId, m.dueSince !== undefined])).toEqual([['fresh', true], ['stale', true], ['day-old', true], ['undated', false], ['job', false]]);
    const sixHours = 6 * 3_600_000;
    expect(await replayParked({ ...opts(), filter: { kind: 'code', code: 'provider-rejected', newerThanMs: sixHours }, force: true })).toMatchObject({ replayed: 1 });
    expect((await listParked(opts())).messages.map((m) => m.messageId)).toEqual(['stale', 'day-old', 'undated', 'job']);
    // --all with an age deletes only what is that old (without one it empties the queue at once).
    expect(await purgeParked({ ...opts(), filter: { kind: 'all', olderThanMs: 48 * 3_600_000 } })).toEqual({ seen: 4, purged: 3 });
    expect((await listParked(opts())).messages.map((m) => m.messageId)).toEqual(['day-old']);
    expect((await takeMessage(url, 'p.work'))).toMatchObject({ properties: { messageId: 'fresh' } });
  });

  it('leaves a message parked when its original queue no longer exists', async () => {
    await park('gone', 'retries-exhausted', 'p.deleted');
    await park('ok', 'retries-exhausted');
    const err = await replayParked({ ...opts(), filter: { kind: 'all' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplayError);
    expect((err as ReplayError).replayed).toBe(1);
    expect((err as ReplayError).message).toMatch(/^replay stopped after 2 of 2 parked message\(s\): 1 replayed, 1 not replayed \(left parked\): queue "p\.deleted" does not exist$/);
    expect((await listParked(opts())).messages.map((m) => m.messageId)).toEqual(['gone']);
    expect(await depth('p.work')).toBe(1);
  });

  it('stops at the first chunk whose copies RabbitMQ does not confirm in time, and leaves every original parked', async () => {
    // 64 KB bodies: a chunk's 6.4 MB cannot be confirmed within 1 ms, so none of the first chunk is.
    const big = Buffer.alloc(64 * 1024, 'x');
    await Promise.all(Array.from({ length: 150 }, (_, i) => park(`big${i}`, 'retries-exhausted', 'p.work', big)));
    const progress: number[] = [];
    const err = await replayParked({ ...opts(), filter: { kind: 'all' }, confirmTimeoutMs: 1, onProgress: (p) => progress.push(p.seen) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplayError);
    expect((err as ReplayError).message).toMatch(
      /^replay stopped after 100 of 150 parked message\(s\): 0 replayed, 100 not replayed \(left parked\), 50 not looked at \(still parked\): no confirm \(none within 1 ms\); its copy may still reach its queue/,
    );
    expect((err as ReplayError).replayed).toBe(0);
    expect(progress).toEqual([100]); // the second chunk was not looked at, nor copied
    expect(await depth('p.work.parked')).toBe(150);
    expect(await depth('p.work')).toBeLessThanOrEqual(100);
  });

  // Before, a replay stopped by its signal resolved with what it did so far, as one that had finished:
  // a caller could not tell a Ctrl-C that came as the last chunk was replayed from one halfway.
  it('stopped by its signal: rejects while messages were left unread, resolves once it had read them all, and keeps why copies failed', async () => {
    const stoppedAt = async (at: number, originalOf: (i: number) => string = () => 'p.work') => {
      for (const queue of ['p.work', 'p.work.parked']) await withChannel((ch) => ch.purgeQueue(queue));
      await Promise.all(Array.from({ length: 150 }, (_, i) => park(`s${i}`, 'retries-exhausted', originalOf(i))));
      const stop = new AbortController();
      return replayParked({ ...opts(), filter: { kind: 'all' }, signal: stop.signal, onProgress: (p) => p.seen === at && stop.abort() }).catch((e: unknown) => e);
    };
    const halfway = await stoppedAt(100);
    expect(halfway).toBeInstanceOf(ParkedSweepStopped);
    expect((halfway as ParkedSweepStopped).message).toBe('stopped after 100 of 150 parked message(s)');
    expect([await depth('p.work'), await depth('p.work.parked')]).toEqual([100, 50]);
    expect(await stoppedAt(150)).toEqual({ seen: 150, replayed: 150, refused: [] });
    const failed = await stoppedAt(100, (i) => (i === 7 ? 'p.deleted' : 'p.work'));
    expect(failed).toBeInstanceOf(ReplayError);
    expect((failed as ReplayError).message).toBe('replay stopped after 100 of 150 parked message(s) (interrupted): 99 replayed, 1 not replayed (left parked): queue "p.deleted" does not exist');
  });

  it('leaves permanent rejections parked unless forced, and says why', async () => {
    await park('bad-json', 'malformed-json');
    await park('rejected', 'provider-rejected');
    await park('fixable', 'app-disabled');
    const unforced = await replayParked({ ...opts(), filter: { kind: 'all' } });
    expect(unforced.replayed).toBe(1);
    expect(unforced.refused).toEqual([
      { code: 'malformed-json', count: 1, why: expect.stringMatching(/not valid JSON/) as unknown, messageIds: ['bad-json'] },
      { code: 'provider-rejected', count: 1, why: expect.stringMatching(/rejected this push for good/) as unknown, messageIds: ['rejected'] },
    ]);
    expect((await listParked(opts())).messages.map((m) => m.messageId).sort()).toEqual(['bad-json', 'rejected']);
    expect(await depth('p.work')).toBe(1);

    const byId = await replayParked({ ...opts(), filter: { kind: 'id', id: 'rejected' } });
    expect(byId).toMatchObject({ replayed: 0, refused: [{ code: 'provider-rejected', count: 1 }] });

    const forced = await replayParked({ ...opts(), filter: { kind: 'all' }, force: true });
    expect(forced).toEqual({ seen: 2, replayed: 2, refused: [] });
    expect(await depth('p.work.parked')).toBe(0);
    expect(await depth('p.work')).toBe(3);
  });

  it("tells onReplayed of the device pushes it replayed, once their copies are on their queues; not of others, nor of those left parked", async () => {
    const push = (pushId: string) => Buffer.from(JSON.stringify({ pushId, jobId: 'job-1', app: 'demo' }));
    await park('p1', 'provider-down', 'p.work', push('p1'));
    await park('job', 'provider-down', 'p.work', Buffer.from(JSON.stringify({ id: 'job-2', app: 'demo' })));
    await park('p2', 'provider-down', 'p.deleted', push('p2'));
    await park('p3', 'schema', 'p.work', push('p3'));
    const told: { pushes: unknown[]; queued: number }[] = [];
    const err = await replayParked({
      ...opts(),
      filter: { kind: 'all' },
      onReplayed: async (pushes) => void told.push({ pushes: [...pushes], queued: await depth('p.work') }),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplayError);
    expect(told).toEqual([{ pushes: [{ pushId: 'p1', jobId: 'job-1' }], queued: 2 }]);
  });

  it('replays all the same when onReplayed fails', async () => {
    await park('p1', 'retries-exhausted', 'p.work', Buffer.from(JSON.stringify({ pushId: 'p1', jobId: 'job-1' })));
    const result = await replayParked({ ...opts(), filter: { kind: 'all' }, onReplayed: () => Promise.reject(new Error('PostgreSQL is away')) });
    expect(result).toEqual({ seen: 1, replayed: 1, refused: [] });
    expect(await depth('p.work.parked')).toBe(0);
    expect(await depth('p.work')).toBe(1);
  });
});
