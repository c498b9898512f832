import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import pg from 'pg';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { createDatabase, type Database } from './database.ts';
import { claimLiveStatement, claimStatement, completeStatement, replacementsStatement } from './delivery-ledger.ts';

const LEASE = 60_000;
let t: SpecDatabase;
let other: Database;
beforeAll(async () => {
  t = await createSpecDatabase('ledger');
  other = createDatabase({ url: t.url, schema: t.schema, poolSize: 4 });
});
afterAll(async () => {
  await other.close();
  await t.drop();
});

const ids = (n: number) => Array.from({ length: n }, () => randomUUID());

describe('DeliveryLedger', () => {
  it('claims new ids; a second claimer sees them in flight; once complete they are done', async () => {
    const [a, b] = ids(2) as [string, string];
    expect(await t.db.ledger.claim([a, b], 'pusher-1', LEASE)).toEqual(
      new Map([
        [a, 'claimed'],
        [b, 'claimed'],
      ]),
    );
    expect(await other.ledger.claim([a, b], 'pusher-2', LEASE)).toEqual(
      new Map([
        [a, 'in-flight'],
        [b, 'in-flight'],
      ]),
    );
    await t.db.ledger.complete([{ pushId: a, outcome: 'delivered' }]);
    expect(await other.ledger.claim([a, b], 'pusher-2', LEASE)).toEqual(
      new Map([
        [a, 'done'],
        [b, 'in-flight'],
      ]),
    );
    const row = await t.db.kysely.selectFrom('delivery_ledger').selectAll().where('push_id', '=', a).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ state: 'done', outcome: 'delivered', owner: 'pusher-1' });
    expect(row.completed_at).toBeInstanceOf(Date);
  });

  it('release lets a retry claim again, but only the owner can release', async () => {
    const [a] = ids(1) as [string];
    await t.db.ledger.claim([a], 'pusher-1', LEASE);
    await other.ledger.release([a], 'pusher-2');
    expect((await other.ledger.claim([a], 'pusher-2', LEASE)).get(a)).toBe('in-flight');
    await t.db.ledger.release([a], 'pusher-1');
    expect((await other.ledger.claim([a], 'pusher-2', LEASE)).get(a)).toBe('claimed');
  });

  it('release never removes a done entry', async () => {
    const [a] = ids(1) as [string];
    await t.db.ledger.claim([a], 'pusher-1', LEASE);
    await t.db.ledger.complete([{ pushId: a, outcome: 'delivered' }]);
    await t.db.ledger.release([a], 'pusher-1');
    expect((await t.db.ledger.claim([a], 'pusher-1', LEASE)).get(a)).toBe('done');
  });

  it('takes over a claim whose lease expired, but not a live one', async () => {
    const [stale, live] = ids(2) as [string, string];
    await t.db.ledger.claim([stale, live], 'crashed-pusher', LEASE);
    await sql`update delivery_ledger set claimed_at = now() - interval '2 minutes' where push_id = ${stale}::uuid`.execute(
      t.db.kysely,
    );
    const result = await other.ledger.claim([stale, live], 'pusher-2', LEASE);
    expect(result).toEqual(
      new Map([
        [stale, 'claimed'],
        [live, 'in-flight'],
      ]),
    );
    const row = await t.db.kysely
      .selectFrom('delivery_ledger')
      .select('owner')
      .where('push_id', '=', stale)
      .executeTakeFirstOrThrow();
    expect(row.owner).toBe('pusher-2');
  });

  it('two concurrent claimers of the same ids: exactly one wins each id, without deadlock', async () => {
    for (let round = 0; round < 10; round++) {
      const batch = ids(50);
      const [r1, r2] = await Promise.all([
        t.db.ledger.claim(batch, 'pusher-1', LEASE),
        other.ledger.claim([...batch].reverse(), 'pusher-2', LEASE),
      ]);
      for (const id of batch) {
        const won = [r1.get(id), r2.get(id)].filter((r) => r === 'claimed');
        expect(won, `round ${round} id ${id}`).toHaveLength(1);
        expect([r1.get(id), r2.get(id)]).toContain('in-flight');
      }
    }
  });

  it('a push completed without a claim of its own is recorded done; an outcome given twice keeps the last', async () => {
    const [a] = ids(1) as [string];
    await t.db.ledger.complete([
      { pushId: a.toUpperCase(), outcome: 'invalid-token' },
      { pushId: a, outcome: 'delivered' },
    ]);
    const row = await t.db.kysely.selectFrom('delivery_ledger').selectAll().where('push_id', '=', a).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ state: 'done', outcome: 'delivered' });
    expect((await other.ledger.claim([a], 'pusher-2', LEASE)).get(a)).toBe('done');
  });

  it('complete writes the job-status outcomes given with its pushes in the same statement, and only those', async () => {
    const [a, b] = ids(2) as [string, string];
    await t.db.ledger.claim([a, b], 'pusher-1', LEASE);
    await t.db.ledger.complete([
      { pushId: a, outcome: 'delivered', status: { pushId: a, jobId: 'job-a', outcome: 'delivered', providerMessageId: 'apns-id-a', platform: 'apns', deviceId: 'd-a' } },
      { pushId: b, outcome: 'delivered' },
    ]);
    const ledger = await t.db.kysely.selectFrom('delivery_ledger').select(['push_id', 'state']).where('push_id', 'in', [a, b]).orderBy('push_id').execute();
    expect(ledger.map((r) => r.state)).toEqual(['done', 'done']);
    const status = await t.db.kysely.selectFrom('push_outcomes').selectAll().where('push_id', 'in', [a, b]).execute();
    expect(status).toEqual([expect.objectContaining({ push_id: a, job_id: 'job-a', outcome: 'delivered', provider_message_id: 'apns-id-a', platform: 'apns', device_id: 'd-a' })]);
    // One statement: when the status part fails, the ledger part is not written either.
    const [c] = ids(1) as [string];
    await t.db.ledger.claim([c], 'pusher-1', LEASE);
    const broken = { pushId: c, jobId: null as unknown as string, outcome: 'delivered' as const };
    await expect(t.db.ledger.complete([{ pushId: c, outcome: 'delivered', status: broken }])).rejects.toThrow(/job_id/);
    expect((await other.ledger.claim([c], 'pusher-2', LEASE)).get(c)).toBe('in-flight');
  });

  it("records pushes already sent whatever the provider said: a NUL or half a surrogate pair in its words is kept as U+FFFD, not refused", async () => {
    const [a] = ids(1) as [string];
    await t.db.ledger.claim([a], 'pusher-1', LEASE);
    // Refused, this record would fail after the send, and the push would go again once its lease ran out.
    await t.db.ledger.complete([
      { pushId: a, outcome: 'invalid: Bad\u0000Token', status: { pushId: a, jobId: 'job-words', outcome: 'invalid', code: 'Bad\u0000Token', reason: 'the provider said \ud800 this' } },
    ]);
    const ledger = await t.db.kysely.selectFrom('delivery_ledger').select(['state', 'outcome']).where('push_id', '=', a).executeTakeFirstOrThrow();
    expect(ledger).toEqual({ state: 'done', outcome: 'invalid: Bad\uFFFDToken' });
    const status = await t.db.kysely.selectFrom('push_outcomes').select(['code', 'reason']).where('push_id', '=', a).executeTakeFirstOrThrow();
    expect(status).toEqual({ code: 'Bad\uFFFDToken', reason: 'the provider said \uFFFD this' });
  });

  it('handles empty input and duplicate ids', async () => {
    expect(await t.db.ledger.claim([], 'p', LEASE)).toEqual(new Map());
    await t.db.ledger.complete([]);
    await t.db.ledger.release([], 'p');
    const [a] = ids(1) as [string];
    expect(await t.db.ledger.claim([a, a], 'p', LEASE)).toEqual(new Map([[a, 'claimed']]));
  });

  it("claimLive claims a batch's pushes, except those whose device is dead now or another user's, in one statement", async () => {
    await t.db.apps.upsert({ id: 'live-chat' });
    const register = (token: string) =>
      t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'live-chat', platform: 'apns', token, userId: 'u', eventAt: '2025-01-01T00:00:00Z' });
    await register('aa'.repeat(32));
    await register('bb'.repeat(32));
    await t.db.devices.invalidate({ app: 'live-chat', platform: 'apns', token: 'bb'.repeat(32), reason: 'Unregistered', observedAt: new Date('2025-02-01T00:00:00Z') });
    const rows = await t.db.kysely.selectFrom('devices').select(['id', 'token']).where('app', '=', 'live-chat').execute();
    const idOf = new Map(rows.map((r) => [r.token, String(r.id)]));
    const push = (token: string, deviceId = idOf.get(token) ?? '987654321', userId = 'u') => ({ pushId: randomUUID(), deviceId, token, userId });
    const live = push('aa'.repeat(32));
    const dead = push('bb'.repeat(32));
    // No such row (pruned once dead, or its app deleted): dead. Sent, it reached whoever holds the token now.
    const unknown = push('cc'.repeat(32));
    // Not a devices id (no push of Herald's), so no device is found: not dead.
    const foreign = push('bb'.repeat(32), 'device-b');
    const done = push('aa'.repeat(32));
    const theirs = push('aa'.repeat(32));
    // Queued for user "before", but the device is registered to "u" now (a tablet handed on).
    const reassigned = push('aa'.repeat(32), undefined, 'before');
    // The same, but addressed to the device itself (a broadcast, a topic's device member): it still goes.
    const toDevice = { ...push('aa'.repeat(32), undefined, 'before'), toDevice: true };
    await t.db.ledger.claim([done.pushId], 'pusher-0', LEASE);
    await t.db.ledger.complete([{ pushId: done.pushId, outcome: 'delivered' }]);
    await other.ledger.claim([theirs.pushId], 'pusher-2', LEASE);
    const upper = { ...live, pushId: live.pushId.toUpperCase() };
    expect(await t.db.ledger.claimLive([live, dead, unknown, foreign, done, theirs, dead, upper, reassigned, toDevice], 'pusher-1', LEASE)).toEqual(
      new Map([
        [live.pushId, 'claimed'],
        [dead.pushId, 'dead'],
        [reassigned.pushId, 'reassigned'],
        [toDevice.pushId, 'claimed'],
        [unknown.pushId, 'gone'],
        [foreign.pushId, 'claimed'],
        [done.pushId, 'done'],
        [theirs.pushId, 'in-flight'],
        [upper.pushId, 'claimed'],
      ]),
    );
    const claimed = await t.db.kysely.selectFrom('delivery_ledger').select(['push_id', 'owner']).where('push_id', 'in', [live.pushId, dead.pushId, unknown.pushId, reassigned.pushId]).execute();
    expect(new Map(claimed.map((r) => [r.push_id, r.owner]))).toEqual(new Map([[live.pushId, 'pusher-1']]));
    expect(await t.db.ledger.claimLive([], 'pusher-1', LEASE)).toEqual(new Map());
  });

  it('claimLive of web pushes reads the subscription their device holds now: a browser subscribed again at the same endpoint has new keys', async () => {
    await t.db.apps.upsert({ id: 'web-chat' });
    const endpoint = 'https://push.example/send/resubscribed';
    const subscribe = (keys: { p256dh: string; auth: string }, applicationServerKey: string, eventAt: string) =>
      t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'web-chat', platform: 'web', token: endpoint, keys, applicationServerKey, userId: 'u', eventAt });
    const before = { p256dh: 'B'.repeat(87), auth: 'a'.repeat(22) };
    const now = { p256dh: 'C'.repeat(87), auth: 'b'.repeat(22) };
    await subscribe(before, 'K'.repeat(87), '2025-01-01T00:00:00Z');
    const { id } = await t.db.kysely.selectFrom('devices').select('id').where('token', '=', endpoint).executeTakeFirstOrThrow();
    const queued = { pushId: randomUUID(), deviceId: String(id), token: endpoint, userId: 'u' };
    await subscribe(now, 'L'.repeat(87), '2025-01-02T00:00:00Z');
    const claims = await t.db.ledger.claimLive([queued], 'pusher-1', LEASE, { webSubscriptions: true });
    expect(claims).toEqual(new Map([[queued.pushId, 'claimed']]));
    expect(claims.subscriptions).toEqual(new Map([[queued.pushId, { webKeys: now, webVapidKey: 'L'.repeat(87) }]]));
    // Asked without (APNs and FCM pushes): the claim alone, no subscription read.
    await t.db.ledger.release([queued.pushId], 'pusher-1');
    const plain = await t.db.ledger.claimLive([queued], 'pusher-1', LEASE);
    expect(plain).toEqual(new Map([[queued.pushId, 'claimed']]));
    expect(plain.subscriptions).toBeUndefined();
  });

  it('claimLive finds a push whose token was replaced moved to the live device its chain of replacements ends at, and claims nothing for it', async () => {
    await t.db.apps.upsert({ id: 'moved-chat' });
    const token = (c: string) => c.repeat(64);
    for (const c of 'abcdefg') {
      await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'moved-chat', platform: 'apns', token: token(c), userId: 'u', eventAt: '2025-01-01T00:00:00Z' });
    }
    const rows = await t.db.kysely.selectFrom('devices').select(['id', 'token']).where('app', '=', 'moved-chat').execute();
    const idOf = (c: string) => String(rows.find((r) => r.token === token(c))?.id);
    // a → b (live); c → d → e (live); f → g, g dead since.
    const replace = (from: string, to: string) =>
      sql`update devices set invalidated_at = now(), invalidation_reason = 'replaced', replaced_by = ${to}::bigint where id = ${idOf(from)}::bigint`.execute(t.db.kysely);
    await replace('a', idOf('b'));
    await replace('c', idOf('d'));
    await replace('d', idOf('e'));
    await replace('f', idOf('g'));
    await t.db.devices.invalidate({ app: 'moved-chat', platform: 'apns', token: token('g'), reason: 'Unregistered', observedAt: new Date() });
    const push = (c: string) => ({ pushId: randomUUID(), deviceId: idOf(c), token: token(c), userId: 'u' });
    const [toB, toE, deadEnd] = [push('a'), push('c'), push('f')];
    const claims = await t.db.ledger.claimLive([toB, toE, deadEnd], 'pusher-1', LEASE);
    expect(claims).toEqual(new Map([[toB.pushId, 'moved'], [toE.pushId, 'moved'], [deadEnd.pushId, 'dead']]));
    expect(claims.moves).toEqual(new Map([[toB.pushId, { deviceId: idOf('b'), token: token('b') }], [toE.pushId, { deviceId: idOf('e'), token: token('e') }]]));
    const ledger = await t.db.kysely.selectFrom('delivery_ledger').select('push_id').where('push_id', 'in', [toB.pushId, toE.pushId, deadEnd.pushId]).execute();
    expect(ledger).toEqual([]);
    // Claimed again for the device it moved to: claimed, with that device's checks (its user's now).
    const moved = { ...toB, ...claims.moves?.get(toB.pushId) };
    const elsewhere = { ...toE, ...claims.moves?.get(toE.pushId), userId: 'someone-else' };
    const again = await t.db.ledger.claimLive([moved, elsewhere], 'pusher-1', LEASE);
    expect(again).toEqual(new Map([[moved.pushId, 'claimed'], [elsewhere.pushId, 'reassigned']]));
    expect(again.moves).toBeUndefined();
    // A replacement deleted since (pruned, its app deleted) ends the chain: dead.
    await sql`delete from devices where id = ${idOf('b')}::bigint`.execute(t.db.kysely);
    const late = push('a');
    expect(await t.db.ledger.claimLive([late], 'pusher-1', LEASE)).toEqual(new Map([[late.pushId, 'dead']]));
  });

  it("claimLive asks again of a push given a recheck whether its job was cancelled, and its user's opt-outs and mutes now, in its app or every app", async () => {
    await t.db.apps.upsert({ id: 'prefs-chat' });
    await t.db.apps.upsert({ id: 'prefs-other' });
    const token = (n: number) => n.toString(16).padStart(2, '0').repeat(32);
    for (const [n, userId] of [[1, 'ann'], [2, 'bob'], [3, 'cat'], [4, 'dan'], [5, 'eve']] as const) {
      await t.db.devices.applyRegistration({ version: 1, kind: 'register', app: 'prefs-chat', platform: 'apns', token: token(n), userId, eventAt: '2025-01-01T00:00:00Z' });
    }
    const rows = await t.db.kysely.selectFrom('devices').select(['id', 'token']).where('app', '=', 'prefs-chat').execute();
    const idOf = new Map(rows.map((r) => [r.token, String(r.id)]));
    const push = (n: number, userId: string, preferences?: { category: string; objectId?: string }, extra: { toDevice?: boolean } = {}) => ({
      pushId: randomUUID(),
      deviceId: idOf.get(token(n)) ?? '',
      token: token(n),
      userId,
      ...extra,
      ...(preferences !== undefined && { recheck: { jobId: 'prefs-job', app: 'prefs-chat', ...preferences } }),
    });
    await t.db.preferences.setOptOut('ann', 'marketing', true, 'prefs-chat');
    await t.db.preferences.setOptOut('bob', 'marketing', true, null);
    await t.db.preferences.setOptOut('cat', 'marketing', true, 'prefs-other');
    await t.db.preferences.setMute('dan', 'thread:1', null, 'prefs-chat');
    await t.db.preferences.setMute('dan', 'thread:2', new Date(Date.now() - 60_000), 'prefs-chat');
    await t.db.preferences.setMute('eve', 'thread:1', new Date(Date.now() + 60_000), null);
    const optedOut = push(1, 'ann', { category: 'marketing' });
    const everyApp = push(2, 'bob', { category: 'marketing', objectId: 'thread:9' });
    const otherApps = push(3, 'cat', { category: 'marketing' });
    const otherCategory = push(1, 'ann', { category: 'social' });
    const muted = push(4, 'dan', { category: 'social', objectId: 'thread:1' });
    const muteOver = push(4, 'dan', { category: 'social', objectId: 'thread:2' });
    const noObject = push(4, 'dan', { category: 'social' });
    const mutedEveryApp = push(5, 'eve', { category: 'social', objectId: 'thread:1' });
    // Not asked: a push sent soon after the demuxer asked.
    const notAsked = push(1, 'ann');
    // Addressed to the device: asked of its holder now (ann, who opted out), not of the user it was made for.
    const heldByAnn = push(1, 'zed', { category: 'marketing' }, { toDevice: true });
    // A user's push whose device went to another user: reassigned, whatever that user chose.
    const reassigned = push(1, 'zed', { category: 'marketing' });
    // A copy of a push delivered before the user opted out: done, not dropped.
    const sent = push(1, 'ann', { category: 'marketing' });
    // A cancelled job's push that waited (a replay after the pushers forgot the cancel): cancelled, not sent.
    await t.db.jobs.accept([{ id: 'cancelled-job', app: 'prefs-chat', team: 't' }]);
    await sql`update jobs set cancelled_at = now() where id = 'cancelled-job'`.execute(t.db.kysely);
    const ofCancelled = { ...push(2, 'bob'), recheck: { jobId: 'cancelled-job', app: 'prefs-chat' } };
    const ofLiveJob = { ...push(2, 'bob'), recheck: { jobId: 'prefs-job', app: 'prefs-chat' } };
    await t.db.ledger.claim([sent.pushId], 'pusher-0', LEASE);
    await t.db.ledger.complete([{ pushId: sent.pushId, outcome: 'delivered' }]);
    expect(await t.db.ledger.claimLive([optedOut, everyApp, otherApps, otherCategory, muted, muteOver, noObject, mutedEveryApp, notAsked, heldByAnn, reassigned, sent, ofCancelled, ofLiveJob], 'pusher-1', LEASE)).toEqual(
      new Map([
        [optedOut.pushId, 'opted-out'],
        [everyApp.pushId, 'opted-out'],
        [otherApps.pushId, 'claimed'],
        [otherCategory.pushId, 'claimed'],
        [muted.pushId, 'muted'],
        [muteOver.pushId, 'claimed'],
        [noObject.pushId, 'claimed'],
        [mutedEveryApp.pushId, 'muted'],
        [notAsked.pushId, 'claimed'],
        [heldByAnn.pushId, 'opted-out'],
        [reassigned.pushId, 'reassigned'],
        [sent.pushId, 'done'],
        [ofCancelled.pushId, 'cancelled'],
        [ofLiveJob.pushId, 'claimed'],
      ]),
    );
    // Another pusher's copy being sent: that copy decides (in flight here), not counted cancelled twice.
    const beingSent = { ...push(2, 'bob'), recheck: { jobId: 'cancelled-job', app: 'prefs-chat' } };
    await other.ledger.claim([beingSent.pushId], 'pusher-2', LEASE);
    expect(await t.db.ledger.claimLive([beingSent], 'pusher-1', LEASE)).toEqual(new Map([[beingSent.pushId, 'in-flight']]));
    // Two copies of one push in a batch, the one that waited first: its recheck holds for both.
    const replayed = { ...push(2, 'bob'), recheck: { jobId: 'cancelled-job', app: 'prefs-chat' } };
    const fresh = { ...replayed, recheck: undefined };
    expect(await t.db.ledger.claimLive([replayed, fresh], 'pusher-1', LEASE)).toEqual(new Map([[replayed.pushId, 'cancelled']]));
    const claimed = await t.db.kysely.selectFrom('delivery_ledger').select('push_id').where('push_id', 'in', [optedOut.pushId, muted.pushId, heldByAnn.pushId, notAsked.pushId]).execute();
    expect(claimed.map((r) => r.push_id)).toEqual([notAsked.pushId]);
  });

  it('marks pushes done in place: the mark writes no second set of index entries (a HOT update)', async () => {
    // The statements as the pushers send them, on one connection in one transaction, whose own
    // counters PostgreSQL keeps (pg_stat_get_xact_*); rolled back, so the ledger keeps nothing.
    // Ten pushes: their marked versions (under 1 KB) fit in the 30% the fill factor keeps free on
    // any page their claims went to, even with the claims' own versions still live.
    const pushIds = ids(10);
    const counters = sql<{ updated: string; hot: string }>`
      select pg_stat_get_xact_tuples_updated('delivery_ledger'::regclass) as updated,
             pg_stat_get_xact_tuples_hot_updated('delivery_ledger'::regclass) as hot`;
    const counts = await t.db.kysely.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      try {
        // The connection's counts not yet reported to the statistics count too: compare before and after.
        const [before] = (await counters.execute(conn)).rows;
        await claimStatement(pushIds, 'pusher-1', LEASE).execute(conn);
        await completeStatement(new Map(pushIds.map((id) => [id, 'delivered']))).execute(conn);
        const [after] = (await counters.execute(conn)).rows;
        return { updated: Number(after?.updated) - Number(before?.updated), hot: Number(after?.hot) - Number(before?.hot) };
      } finally {
        await sql`rollback`.execute(conn);
      }
    });
    expect(counts).toEqual({ updated: 10, hot: 10 });
  });

  it('the prepared claims and complete never scan the ledger or the devices, even with a plan made while they were empty', async () => {
    // A prepared statement keeps its generic plan. Made on a new schema's empty ledger, a join back
    // to it planned a sequential scan that then ran for every batch as the table grew; claimLive's
    // join to devices did the same until the next ANALYZE.
    const fresh = await createSpecDatabase('ledger_plan');
    const client = new pg.Client({ connectionString: fresh.url, options: `-c search_path=${fresh.schema}` });
    await client.connect();
    try {
      await client.query('set plan_cache_mode = force_generic_plan');
      const [a] = ids(1) as [string];
      const statements = {
        claim: claimStatement([a], 'pusher-1', LEASE),
        claimLive: claimLiveStatement([{ pushId: a, deviceId: '1', token: 'aa'.repeat(32), userId: 'u', toDevice: true, recheck: { jobId: 'j', app: 'a', category: 'c', objectId: 'o' } }], 'pusher-1', LEASE),
        // Most batches: no push that waited, no recheck (another statement).
        claimLiveFresh: claimLiveStatement([{ pushId: a, deviceId: '1', token: 'aa'.repeat(32), userId: 'u' }], 'pusher-1', LEASE),
        // A web pusher's: with the subscription each claimed push's device holds now.
        claimLiveWeb: claimLiveStatement([{ pushId: a, deviceId: '1', token: 'https://push.example/s', userId: 'u' }], 'pusher-1', LEASE, true),
        // A batch's dead pushes: where their device's token went.
        replacements: replacementsStatement([{ pushId: a, deviceId: '1' }]),
        complete: completeStatement(new Map([[a, 'delivered']])),
        completeWithStatus: completeStatement(new Map([[a, 'delivered']]), [{ pushId: a, jobId: 'j', outcome: 'delivered', platform: 'apns', deviceId: 'd' }]),
      };
      for (const [name, statement] of Object.entries(statements)) {
        const { sql: text, parameters } = statement.compile(fresh.db.kysely);
        await client.query(`prepare ${name} as ${text}`);
        const args = parameters.map((v) => (typeof v === 'number' ? String(v) : client.escapeLiteral(Array.isArray(v) ? `{${v.join(',')}}` : String(v))));
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`explain execute ${name}(${args.join(', ')})`);
        const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
        if (name !== 'replacements') expect(plan, name).toContain('Conflict Arbiter Indexes: delivery_ledger_pkey');
        expect(plan, name).not.toMatch(/Scan on (delivery_ledger|push_outcomes)/);
        if (name.startsWith('claimLive') || name === 'replacements') expect(plan, name).toMatch(/Index Scan using devices_pkey on devices/);
        expect(plan, name).not.toMatch(/Seq Scan on (devices|opt_outs|mutes|jobs)/);
        if (name === 'claimLive') expect(plan, name).toMatch(/Index.*Scan using opt_outs_\w+ on opt_outs[\s\S]*Index.*Scan using mutes_\w+ on mutes/);
      }
    } finally {
      await client.end();
      await fresh.drop();
    }
  });
});
