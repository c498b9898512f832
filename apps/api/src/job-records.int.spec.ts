import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRepository } from '@herald/db';
import { createLogger } from '@herald/logging';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { createJobRecords } from './job-records.ts';

const logger = createLogger({ service: 'job-records-test', level: 'silent' });
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('job_records');
});
afterAll(() => t.drop());

describe("the API's job-id records", () => {
  it('answers a repost as a duplicate when the published mark is written while the repost reads the record', async () => {
    // The real repository, with one hook: after a repost's read, wait for whatever the test says
    // (here: the background "published" mark being written), as a slow answer would.
    const hook: { afterRead?: () => Promise<void> } = {};
    const jobs: JobRepository = {
      ...t.db.jobs,
      accept: async (items) => {
        const found = await t.db.jobs.accept(items);
        await hook.afterRead?.();
        return found;
      },
    };
    const records = createJobRecords(jobs, logger);
    const id = randomUUID();
    expect((await records.accept([{ id, app: 'demo', team: 't' }])).get(id)).toEqual({ kind: 'new' });
    records.markPublished([{ id, app: 'demo', team: 't' }]); // confirmed; the mark goes to PostgreSQL up to 10 ms later
    hook.afterRead = () => records.flush();
    expect((await records.accept([{ id, app: 'demo', team: 't' }])).get(id)).toEqual({
      kind: 'existing',
      app: 'demo',
      published: true,
      cancelled: false,
    });
    expect((await t.db.jobs.get(id))?.publishedAt).not.toBeNull();
  });

  it('records an id posted by two requests in the same turn once: the other is a repost, or a conflict for another app', async () => {
    const records = createJobRecords(t.db.jobs, logger);
    const [id, other] = [randomUUID(), randomUUID()];
    const [a, b, c, d] = await Promise.all([
      records.accept([{ id, app: 'demo', team: 'team-a' }]),
      records.accept([{ id, app: 'rival', team: 'team-b' }]),
      records.accept([{ id: other, app: 'demo', team: 'team-a' }]),
      records.accept([{ id: other, app: 'demo', team: 'team-a' }]),
    ]);
    expect([a.get(id), b.get(id)]).toEqual([{ kind: 'new' }, { kind: 'existing', app: 'demo', published: false, cancelled: false }]);
    expect([c.get(other), d.get(other)]).toEqual([{ kind: 'new' }, { kind: 'existing', app: 'demo', published: false, cancelled: false }]);
    expect((await t.db.jobs.get(id))?.app).toBe('demo');
  });

  it('answers a repost after the mark is written from PostgreSQL alone', async () => {
    const records = createJobRecords(t.db.jobs, logger);
    const id = randomUUID();
    await records.accept([{ id, app: 'demo', team: 't' }]);
    records.markPublished([{ id, app: 'demo', team: 't' }]);
    await records.flush();
    const elsewhere = createJobRecords(t.db.jobs, logger); // another API process: nothing in memory
    expect((await elsewhere.accept([{ id, app: 'demo', team: 't' }])).get(id)).toEqual({
      kind: 'existing',
      app: 'demo',
      published: true,
      cancelled: false,
    });
  });

  /** A digest of jobContentHash's version 0 (32 bytes): two of different versions are not told apart. */
  const digest = (text: string) => Buffer.alloc(32, text);

  it("keeps the record of a job one request published while another request's publish of the same id failed", async () => {
    const record = { id: randomUUID(), app: 'demo', team: 't', contentHash: digest('digest') };
    const here = createJobRecords(t.db.jobs, logger);
    await here.accept([record]);
    // This process: the confirm came first, its mark not written yet; the failed request forgets.
    here.markPublished([record]);
    await here.forget([record.id]);
    expect(await t.db.jobs.get(record.id)).toMatchObject({ app: 'demo' });
    await here.flush();
    expect((await t.db.jobs.get(record.id))?.publishedAt).not.toBeNull();
    // Another API process forgot the record before this one's mark was written: the mark puts it back.
    const other = randomUUID();
    await here.accept([{ ...record, id: other }]);
    const elsewhere = createJobRecords(t.db.jobs, logger);
    await elsewhere.forget([other]);
    expect(await t.db.jobs.get(other)).toBeUndefined();
    here.markPublished([{ ...record, id: other }]);
    await here.flush();
    expect(await t.db.jobs.get(other)).toMatchObject({ app: 'demo', publishedAt: expect.any(Date) });
    expect((await elsewhere.accept([{ ...record, id: other, contentHash: digest('other') }])).get(other)).toMatchObject({ published: true, sameContent: false });
  });
});
