import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@herald/testing';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { cancelJobFully } from './cancel-job.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('jobs');
});
afterAll(() => t.drop());

describe('job records', () => {
  it('accepts an id once; an unpublished record can be forgotten, a published one cannot', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const first = await t.db.jobs.accept([{ id: a, app: 'demo', team: 't' }, { id: b, app: 'demo', team: 't' }]);
    expect([...first.values()]).toEqual([{ kind: 'new' }, { kind: 'new' }]);
    await t.db.jobs.markPublished([{ id: a, app: 'demo', team: 't' }]);
    await t.db.jobs.forget([a, b]);
    const again = await t.db.jobs.accept([{ id: a, app: 'other', team: 't' }, { id: b, app: 'demo', team: 't' }]);
    expect(again.get(a)).toEqual({ kind: 'existing', app: 'demo', published: true, cancelled: false });
    expect(again.get(b)).toEqual({ kind: 'new' });
  });

  // A publish whose confirm timed out may still arrive; cancelled meanwhile (DELETE answered 200), the
  // job's record must keep its mark, or the demuxer would take the late message as never cancelled.
  it('keeps an unpublished record that was cancelled: its cancel outlives a failed publish', async () => {
    const id = randomUUID();
    await t.db.jobs.accept([{ id, app: 'demo', team: 't' }]);
    await cancelJobFully(t.db, id);
    await t.db.jobs.forget([id]);
    const row = await t.db.kysely.selectFrom('jobs').select('cancelled_at').where('id', '=', id).executeTakeFirst();
    expect(row?.cancelled_at).toBeInstanceOf(Date);
  });

  it("marks only the record a job was accepted as: one forgotten and taken by another app meanwhile stays that app's", async () => {
    const id = randomUUID();
    const mine = { id, app: 'demo', team: 't', contentHash: Buffer.alloc(32, 'mine') };
    await t.db.jobs.accept([mine]);
    await t.db.jobs.forget([id]);
    expect((await t.db.jobs.accept([{ id, app: 'other', team: 't', contentHash: Buffer.alloc(32, 'theirs') }])).get(id)).toEqual({ kind: 'new' });
    await t.db.jobs.markPublished([mine]);
    expect(await t.db.jobs.get(id)).toMatchObject({ app: 'other', publishedAt: null });
    await t.db.jobs.markPublished([{ ...mine, app: 'other', contentHash: Buffer.alloc(32, 'theirs') }]);
    expect((await t.db.jobs.get(id))?.publishedAt).not.toBeNull();
    // A record without a digest (accepted by an API before 0034) is marked by the same app's mark.
    const older = randomUUID();
    await t.db.jobs.accept([{ id: older, app: 'demo', team: 't' }]);
    await t.db.jobs.markPublished([{ ...mine, id: older }]);
    expect((await t.db.jobs.get(older))?.publishedAt).not.toBeNull();
  });

  it("the demuxer's record of a job whose id another job holds writes nothing of it: another app's, other content; a digest unknown on either side does not tell them apart", async () => {
    const [id, legacy] = [randomUUID(), randomUUID()];
    const entry = (over: { app?: string; contentHash?: Buffer; pushes?: boolean } = {}) => ({
      id,
      app: over.app ?? 'demo',
      targeted: 1,
      outcome: 'fanned-out',
      ...(over.contentHash !== undefined && { contentHash: over.contentHash }),
      ...(over.pushes === true && { pushes: [{ pushId: randomUUID(), jobId: id, outcome: 'opted-out' as const, code: 'opted-out' }] }),
    });
    // Digests of jobContentHash's version 0 (32 bytes): two of different versions are not told apart.
    const digest = (text: string) => Buffer.alloc(32, text);
    const h1 = digest('one');
    expect((await t.db.jobs.recordDemux([entry({ contentHash: h1 })])).taken).toEqual(new Map());
    const other = await t.db.jobs.recordDemux([entry({ app: 'other', contentHash: h1, pushes: true })]);
    expect(other.taken).toEqual(new Map([[id, { code: 'job-id-conflict', reason: `job id "${id}" is already used by another app` }]]));
    const reused = await t.db.jobs.recordDemux([entry({ contentHash: digest('two'), pushes: true })]);
    expect(reused.taken.get(id)?.code).toBe('job-id-reused');
    // Neither wrote its outcomes against the first job's record.
    expect(await t.db.kysely.selectFrom('push_outcomes').select('push_id').where('job_id', '=', id).execute()).toEqual([]);
    expect((await t.db.jobs.recordDemux([entry({ contentHash: h1 })])).taken).toEqual(new Map());

    // A row with no digest (the demuxer's before it kept one): the next copy's is taken as its own, then holds.
    await t.db.jobs.recordDemux([{ id: legacy, app: 'demo', targeted: 1, outcome: 'fanned-out' }]);
    expect((await t.db.jobs.recordDemux([{ ...entry({ contentHash: h1 }), id: legacy }])).taken).toEqual(new Map());
    expect((await t.db.jobs.recordDemux([{ ...entry({ contentHash: digest('two') }), id: legacy }])).taken.get(legacy)?.code).toBe('job-id-reused');
  });

  it('a park is not written onto another job’s row; a row that records only the park of a job naming an unknown app is taken over by the job published again under its id (the app corrected); digests of two versions are not told apart', async () => {
    const [held, parkedOnly, versioned] = [randomUUID(), randomUUID(), randomUUID()];
    const digest = (text: string) => Buffer.alloc(32, text);
    // Accepted by the API, not yet demuxed or published: a copy parked for another app or other content leaves it.
    await t.db.jobs.accept([{ id: held, app: 'demo', team: 't', contentHash: digest('a') }]);
    await t.db.jobs.recordJobParks([{ id: held, app: 'other', code: 'unknown-app', reason: 'unknown app "other"', contentHash: digest('b') }]);
    await t.db.jobs.recordJobParks([{ id: held, app: 'demo', code: 'provider-rules', reason: 'x', contentHash: digest('c') }]);
    expect(await t.db.jobs.get(held)).toMatchObject({ app: 'demo', publishedAt: null, demuxOutcome: null, demuxReason: null });
    // The same job parked: shown on its row.
    await t.db.jobs.recordJobParks([{ id: held, app: 'demo', code: 'app-disabled', reason: 'app "demo" is disabled', contentHash: digest('a') }]);
    expect(await t.db.jobs.get(held)).toMatchObject({ app: 'demo', demuxOutcome: 'parked: app-disabled' });

    await t.db.jobs.recordJobParks([{ id: parkedOnly, app: 'Demo', code: 'unknown-app', reason: 'unknown app "Demo"', contentHash: digest('d') }]);
    expect((await t.db.jobs.recordDemux([{ id: parkedOnly, app: 'demo', targeted: 1, outcome: 'fanned-out', contentHash: digest('e') }])).taken).toEqual(new Map());
    expect(await t.db.jobs.get(parkedOnly)).toMatchObject({ app: 'demo', demuxOutcome: 'fanned-out' });
    expect((await t.db.jobs.recordDemux([{ id: parkedOnly, app: 'demo', targeted: 1, outcome: 'fanned-out', contentHash: digest('d') }])).taken.get(parkedOnly)?.code).toBe('job-id-reused');

    // A digest of another version (33 bytes, the version first) is not held against one of version 0.
    await t.db.jobs.recordDemux([{ id: versioned, app: 'demo', targeted: 1, outcome: 'fanned-out' }]);
    await t.db.kysely.updateTable('jobs').set({ content_hash: Buffer.concat([Buffer.from([1]), digest('f')]) }).where('id', '=', versioned).execute();
    expect((await t.db.jobs.recordDemux([{ id: versioned, app: 'demo', targeted: 1, outcome: 'fanned-out', contentHash: digest('g') }])).taken).toEqual(new Map());
  });

  it("records a park whose reason quotes a NUL (a data key named in a schema violation), made storable: a refused write blocked every later park record", async () => {
    const id = randomUUID();
    await t.db.jobs.recordJobParks([{ id, app: 'demo', code: 'schema', reason: 'schema violation: content.data: Unrecognized key: "k\u0000"' }]);
    expect(await t.db.jobs.get(id)).toMatchObject({ demuxOutcome: 'parked: schema', demuxReason: 'schema violation: content.data: Unrecognized key: "k\ufffd"' });
  });

  it("writes a new row's acceptedAt as the job's (one that waited in push.jobs, demuxed or parked), never ahead of now; a row the API's accept wrote keeps its own", async () => {
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    const [waited, parked, ahead, unstamped, posted] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const demuxed = (id: string, acceptedAt?: Date) => ({ id, app: 'demo', targeted: 1, outcome: 'fanned-out', ...(acceptedAt !== undefined && { acceptedAt }) });
    await t.db.jobs.accept([{ id: posted, app: 'demo', team: 't' }]);
    const postedAt = (await t.db.jobs.get(posted))?.acceptedAt;
    const before = Date.now();
    await t.db.jobs.recordDemux([demuxed(waited, twoHoursAgo), demuxed(ahead, new Date(Date.now() + 3_600_000)), demuxed(unstamped), demuxed(posted, twoHoursAgo)]);
    await t.db.jobs.recordJobParks([{ id: parked, app: 'demo', code: 'app-disabled', reason: 'app "demo" is disabled', acceptedAt: twoHoursAgo }]);
    const acceptedAt = async (id: string) => (await t.db.jobs.get(id))?.acceptedAt.getTime() ?? Number.NaN;
    expect(await acceptedAt(waited)).toBe(twoHoursAgo.getTime());
    expect(await acceptedAt(parked)).toBe(twoHoursAgo.getTime());
    // A producer's clock running ahead, and a job without acceptedAt: when the demuxer recorded it.
    for (const id of [ahead, unstamped]) {
      expect(await acceptedAt(id)).toBeGreaterThanOrEqual(before - 1_000);
      expect(await acceptedAt(id)).toBeLessThanOrEqual(Date.now());
    }
    expect(await acceptedAt(posted)).toBe(postedAt?.getTime());
  });

  it('accepts a single id once, through the same check as a batch', async () => {
    const id = randomUUID();
    expect(await t.db.jobs.accept([{ id, app: 'demo', team: 't' }])).toEqual(new Map([[id, { kind: 'new' }]]));
    expect((await t.db.jobs.get(id))?.app).toBe('demo');
    expect(await t.db.jobs.accept([{ id, app: 'other', team: 't' }])).toEqual(new Map([[id, { kind: 'existing', app: 'demo', published: false, cancelled: false }]]));
    await t.db.jobs.markPublished([{ id, app: 'demo', team: 't' }]);
    const both = await t.db.jobs.accept([{ id, app: 'demo', team: 't' }, { id: randomUUID(), app: 'demo', team: 't' }]);
    expect(both.get(id)).toEqual({ kind: 'existing', app: 'demo', published: true, cancelled: false });
  });

  it('counts outcomes per job once per push, and the demuxer upsert does not double count', async () => {
    const job = randomUUID();
    await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 3, outcome: 'fanned-out' }]);
    await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 3, outcome: 'fanned-out' }]);
    const [p1, p2, p3] = [randomUUID(), randomUUID(), randomUUID()];
    await t.db.jobs.recordOutcomes([{ pushId: p1, jobId: job, outcome: 'parked' }, { pushId: p2, jobId: job, outcome: 'delivered' }, { pushId: p3, jobId: job, outcome: 'invalid' }]);
    await t.db.jobs.recordOutcomes([{ pushId: p1, jobId: job, outcome: 'delivered' }]);
    const status = await t.db.jobs.status(job);
    expect(status).toMatchObject({ job: { targeted: 3, demuxOutcome: 'fanned-out' }, outcomes: { delivered: 2, invalid: 1 }, scheduled: 0 });
    expect(status?.job.publishedAt).not.toBeNull();
  });

  it("tells the demuxer which first reads an earlier fan-out recorded (a copy published again), and writes none of their pushes' outcomes; a retry's read it writes", async () => {
    const [job, parkedFirst, accepted] = [randomUUID(), randomUUID(), randomUUID()];
    const muted = (pushId: string, jobId: string) => ({ pushId, jobId, outcome: 'muted' as const, platform: 'apns', deviceId: '1' });
    const [p1, p2, p3] = [randomUUID(), randomUUID(), randomUUID()];
    // A first record, a record of a job parked before any fan-out, and one of a job the API accepted: none fanned out before.
    await t.db.jobs.recordJobParks([{ id: parkedFirst, app: 'demo', code: 'app-disabled', reason: 'app "demo" is disabled' }]);
    await t.db.jobs.accept([{ id: accepted, app: 'demo', team: 't' }]);
    const first = await t.db.jobs.recordDemux([job, parkedFirst, accepted].map((id) => ({ id, app: 'demo', targeted: 2, outcome: 'fanned-out', pushes: [muted(id === job ? p1 : randomUUID(), id)] })));
    expect([...first.fannedOutBefore]).toEqual([]);
    // The copy published again, read as a first pass: its outcomes are not written.
    const copy = await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 2, outcome: 'fanned-out', pushes: [muted(p2, job)] }]);
    expect([...copy.fannedOutBefore]).toEqual([job]);
    // Read again as a retry: written, and not told again.
    const retry = await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 2, outcome: 'fanned-out', pushes: [muted(p3, job)], again: true }]);
    expect([...retry.fannedOutBefore]).toEqual([]);
    expect((await t.db.jobs.pushes(job, { limit: 10 })).map((p) => p.pushId).sort()).toEqual([p1, p3].sort());
  });

  it('tells a copy whose record waited for a lock while another demuxer recorded the job, after it began, that the job was fanned out before', async () => {
    const suffix = randomUUID();
    // The held row sorts before the job, so the copy's upsert waits for it before it reaches the job's row.
    const [held, job] = [`a-${suffix}`, `b-${suffix}`];
    await t.db.jobs.recordDemux([{ id: held, app: 'demo', targeted: 1, outcome: 'fanned-out' }]);
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let locked = (): void => undefined;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = t.db.kysely.transaction().execute(async (trx) => {
      await sql`select 1 from jobs where id = ${held} for no key update`.execute(trx);
      locked();
      await gate;
    });
    await isLocked;
    const copy = t.db.jobs.recordDemux([held, job].map((id) => ({ id, app: 'demo', targeted: 1, outcome: 'fanned-out' })));
    await waitFor('the copy waiting for the held row', async () =>
      (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%insert into jobs%'`.execute(t.db.kysely)).rows[0]?.n ? true : undefined,
    );
    // Another demuxer's copy, begun after it, records the job first.
    expect([...(await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 1, outcome: 'fanned-out' }])).fannedOutBefore]).toEqual([]);
    release();
    await holder;
    expect([...(await copy).fannedOutBefore].sort()).toEqual([held, job]);
  });

  it('runs concurrent overlapping writes without deadlocks', async () => {
    const ids = Array.from({ length: 200 }, () => randomUUID());
    await t.db.jobs.accept(ids.map((id) => ({ id, app: 'demo', team: null })));
    const shuffled = () => [...ids].sort(() => Math.random() - 0.5);
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        i % 2 === 0
          ? t.db.jobs.markPublished(shuffled().map((id) => ({ id, app: 'demo', team: null })))
          : t.db.jobs.recordDemux(shuffled().map((id) => ({ id, app: 'demo', targeted: 1, outcome: 'fanned-out' }))),
      ),
    );
    expect((await t.db.jobs.get(ids[0] ?? ''))?.publishedAt).not.toBeNull();
  });
});
