import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Exchanges, MAX_BATCH_JOBS, PushJob, Queues, jobContentHash, type Registration } from '@herald/contracts';
import { appHasWebDevices, cancelJobFully, createDatabase, isDatabaseUnavailable, type ApiKeyRow } from '@herald/db';
import { createLogger } from '@herald/logging';
import { BrokerUnavailableError, PublishFailedError, PublishNotSentError, coalescedPublish, connectBroker, heraldTopology, type Broker } from '@herald/messaging';
import { createTestDatabase, createTestVhost, startTcpProxyFor, waitFor, type TestDatabase, type TestVhost } from '@herald/testing';
import { ApiError } from './api-error.ts';
import { createJobRecords } from './job-records.ts';
import { acceptJob, acceptJobs, cancelJob, jobStatus, type JobServiceDeps } from './job-service.ts';

const logger = createLogger({ service: 'job-service-test', level: 'silent' });
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;
let deps: JobServiceDeps;
let records: ReturnType<typeof createJobRecords>;
/** Ids published since the test last emptied it. */
let published: string[] = [];

function p256(): string {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]).toString('base64url');
}
const browser = (app: string, userId: string): Registration =>
  ({ version: 1, kind: 'register', app, platform: 'web', token: `https://fcm.googleapis.com/fcm/send/${app}-${userId}`, userId, keys: { p256dh: p256(), auth: randomBytes(16).toString('base64url') }, eventAt: '2025-01-01T00:00:00Z' }) as Registration;

beforeAll(async () => {
  t = await createTestDatabase('jobservice');
  vhost = await createTestVhost('jobservice');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'job-service-test' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
  // Neither app has VAPID keys of its own; "site" has a browser all the same (signed with the web-pusher's pair), "phones" has none.
  await t.db.apps.upsert({ id: 'site' });
  await t.db.apps.upsert({ id: 'phones' });
  for (const id of ['paused', 'grown', 'held', 'parking', 'quitting']) await t.db.apps.upsert({ id });
  await t.db.devices.applyRegistrations([browser('site', 'bea'), { version: 1, kind: 'register', app: 'phones', platform: 'apns', token: 'ab'.repeat(32), userId: 'ann', eventAt: '2025-01-01T00:00:00Z' }]);
  records = createJobRecords(t.db.jobs, logger);
  deps = {
    jobs: records,
    apps: t.db.apps,
    webDevices: { get: (app) => appHasWebDevices(t.db.kysely, app) },
    publish: async (job) => {
      await broker.publisher.publish({ exchange: Exchanges.jobs, routingKey: Queues.jobs, body: job, messageId: job.id });
      published.push(job.id);
    },
    cancel: () => Promise.resolve(0),
  };
});
afterAll(async () => {
  await records.flush();
  await broker.close();
  await vhost.delete();
  await t.drop();
});

const key: ApiKeyRow = { id: 'k', team: 'team', apps: ['site', 'phones', 'paused', 'grown', 'held', 'parking', 'quitting'], createdAt: new Date(), revokedAt: null, kind: 'team' };
/** About 4,000 bytes of JSON: within APNs' and FCM's 4,096, beyond Web Push's 3,993. */
const big = { title: 'big', data: { blob: 'x'.repeat(3900) } };
const job = (app: string, content: object = { title: 'hi' }) => ({ id: randomUUID(), app, userId: 'u', category: 'news', content });
const refusal = async (accepting: Promise<unknown>) => {
  const err = await accepting.then(() => undefined, (e: unknown) => e);
  return err instanceof ApiError ? { status: err.status, issues: err.issues } : err;
};
const refusalCode = async (accepting: Promise<unknown>) => {
  const err = await accepting.then(() => undefined, (e: unknown) => e);
  return err instanceof ApiError ? { status: err.status, code: err.code } : err;
};

describe('a batch RabbitMQ confirms only in part', () => {
  it('answers 503 naming each job not confirmed by its path, and keeps its record, unpublished', async () => {
    const batch = { jobs: [job('phones'), job('phones'), job('phones')] };
    const failing = batch.jobs[1]?.id;
    const partial: JobServiceDeps = { ...deps, publish: (j) => (j.id === failing ? Promise.reject(new Error('not confirmed')) : deps.publish(j)) };
    const err = await acceptJobs(batch, key, partial).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({
      status: 503,
      code: 'broker-unavailable',
      issues: [{ path: 'jobs.1.id', message: `job "${failing}" was not confirmed: it may still arrive; repost it as it was, or cancel it` }],
    });
    expect((err as ApiError).message).toMatch(/^1 of the request's 3 jobs were not published \(not confirmed\); .*; not confirmed: jobs\.1\.id$/);
    // Its record stays (the message may still arrive): a cancel finds it, and a repost with other content is refused.
    expect((await t.db.jobs.get(failing ?? ''))?.publishedAt).toBeNull();
    // Refused before it was sent (RabbitMQ blocking publishers), a new job is forgotten: the caller may correct it.
    const blocked: JobServiceDeps = { ...deps, publish: () => Promise.reject(new BrokerUnavailableError('RabbitMQ is blocking publishers; message not published')) };
    const corrected = job('phones');
    const refused = await acceptJob(corrected, key, blocked).then(() => undefined, (e: unknown) => e);
    expect(refused).toMatchObject({
      status: 503,
      code: 'broker-unavailable',
      issues: [{ path: 'id', message: `job "${corrected.id}" was not sent: nothing of it will arrive, and its id is free; repost it, corrected if need be` }],
    });
    expect((refused as ApiError).message).toMatch(/; not sent: id$/);
    expect(await t.db.jobs.get(corrected.id)).toBeUndefined();
    // So a cancel finds nothing to cancel, as the refusal said.
    expect((await cancelJobFully(t.db, corrected.id)).known).toBe(false);
    expect(await acceptJob({ ...corrected, content: { title: 'corrected' } }, key, deps)).toEqual({ id: corrected.id, duplicate: false });
    // The retry publishes the one that failed and reports the others as duplicates.
    const retried = await acceptJobs(batch, key, deps);
    expect(retried.map((a) => a.duplicate)).toEqual([true, false, true]);
  });
});

describe('the HTTP API: a job that had expired when it was accepted (an expiresAt in the past: a wrong year or offset)', () => {
  it('is refused 400 naming expiresAt, scheduled in the past too, nothing published; a repost of one accepted before its expiry is its duplicate', async () => {
    const t0 = Date.now();
    const then = { ...deps, now: () => new Date(t0) };
    const anHourAgo = new Date(t0 - 3_600_000).toISOString();
    published = [];
    expect(await refusal(acceptJob({ ...job('phones'), expiresAt: anHourAgo }, key, then))).toEqual({
      status: 400,
      issues: [{ path: 'expiresAt', message: expect.stringMatching(/^the job had expired when it was accepted .* check its date and UTC offset$/) as unknown }],
    });
    // Due two hours ago (so at once), expiring an hour ago: its due time comes before its expiry, and nothing goes.
    const scheduled = { ...job('phones'), deliverAt: { at: new Date(t0 - 7_200_000).toISOString() }, expiresAt: anHourAgo };
    expect(await refusal(acceptJobs({ jobs: [job('phones'), scheduled] }, key, then))).toEqual({ status: 400, issues: [{ path: 'jobs.1.expiresAt', message: expect.any(String) as unknown }] });
    expect(published).toEqual([]);
    // Accepted a minute before its expiry, its answer lost, reposted ten minutes after it: the duplicate it is.
    const first = { ...job('phones'), expiresAt: new Date(t0 + 60_000).toISOString() };
    expect(await acceptJob(first, key, then)).toEqual({ id: first.id, duplicate: false });
    await records.flush();
    expect(await acceptJob(first, key, { ...deps, now: () => new Date(t0 + 660_000) })).toEqual({ id: first.id, duplicate: true });
  });

  // Before, an API host whose clock ran two minutes ahead of the demuxer's refused a deadline another host set a minute ahead, which the demuxer delivers.
  it('takes an expiresAt less than CLOCK_SKEW_ALLOWANCE_MS (5 minutes) before the request: clocks apart, not a wrong date', async () => {
    const t0 = Date.now();
    const ahead = { ...deps, now: () => new Date(t0 + 120_000) };
    const deadline = { ...job('phones'), expiresAt: new Date(t0 + 60_000).toISOString() };
    expect(await acceptJob(deadline, key, ahead)).toEqual({ id: deadline.id, duplicate: false });
    expect(await refusal(acceptJob({ ...job('phones'), expiresAt: new Date(t0 + 120_000 - 300_000).toISOString() }, key, ahead))).toMatchObject({ status: 400, issues: [{ path: 'expiresAt' }] });
  });
});

describe('a batch retried, as its 503 asks, once a job it published has expired', () => {
  // Before, the retry stamped at its own time refused the job published in time as expired, and the whole batch with it (400).
  it('answers the published job as its duplicate whatever its expiry and publishes the one not confirmed; a new job expired at acceptance is still refused', async () => {
    const t0 = Date.now();
    const sent = { ...job('phones'), expiresAt: new Date(t0 + 5 * 60_000).toISOString() };
    const unconfirmed = job('phones');
    const partial: JobServiceDeps = { ...deps, now: () => new Date(t0), publish: (j) => (j.id === unconfirmed.id ? Promise.reject(new Error('not confirmed')) : deps.publish(j)) };
    expect(await acceptJobs({ jobs: [sent, unconfirmed] }, key, partial).catch((e: unknown) => e)).toMatchObject({
      status: 503,
      message: expect.stringMatching(/retry: jobs already published are reported as duplicates/) as unknown,
      issues: [{ path: 'jobs.1.id' }],
    });
    // A quarter of an hour later, ten minutes past the published job's expiry.
    const later: JobServiceDeps = { ...deps, now: () => new Date(t0 + 15 * 60_000) };
    published = [];
    expect(await acceptJobs({ jobs: [sent, unconfirmed] }, key, later)).toEqual([
      { id: sent.id, duplicate: true },
      { id: unconfirmed.id, duplicate: false },
    ]);
    expect(published).toEqual([unconfirmed.id]);
    // Its marks written (read from PostgreSQL, not this process's memory): the same again.
    await records.flush();
    expect(await acceptJobs({ jobs: [sent, unconfirmed] }, key, later)).toEqual([
      { id: sent.id, duplicate: true },
      { id: unconfirmed.id, duplicate: true },
    ]);
    // A new job as expired, beside the published one, is refused; so is a published one reposted with other content.
    const expired = { ...job('phones'), expiresAt: sent.expiresAt };
    expect(await refusal(acceptJobs({ jobs: [sent, expired] }, key, later))).toEqual({
      status: 400,
      issues: [{ path: 'jobs.1.expiresAt', message: expect.stringMatching(/^the job had expired when it was accepted/) as unknown }],
    });
    expect(await refusal(acceptJobs({ jobs: [{ ...sent, content: { title: 'other' } }, unconfirmed] }, key, later))).toEqual({
      status: 400,
      issues: [{ path: 'jobs.0.expiresAt', message: expect.any(String) as unknown }],
    });
    expect(published).toEqual([unconfirmed.id]);
  });
});

describe('the HTTP API publishing while RabbitMQ stops answering (API_PUBLISH_CONFIRM_TIMEOUT_MS)', () => {
  // Before, the job left waiting was answered "not sent" and its id freed: a repost of it handed to the publisher meanwhile could be on its way (below).
  it('answers a job its timeout left waiting behind unconfirmed rounds as not confirmed, as one whose round started, and keeps both ids: a repost as it was is published, a corrected one refused', async () => {
    const proxy = await startTcpProxyFor(vhost.amqpUrl);
    // As main.ts publishes (both deadlines the setting), with one job a round: as under more jobs at once than a round takes.
    const stalling = await connectBroker({ url: proxy.urlFor(vhost.amqpUrl), logger, connectionName: 'job-service-stall', confirmTimeoutMs: 300 });
    const publishJob = coalescedPublish(stalling.publisher, { maxBatch: 1, callTimeoutMs: 300 });
    const handed: string[] = [];
    const through: JobServiceDeps = {
      ...deps,
      publish: (j) => {
        handed.push(j.id);
        return publishJob({ exchange: Exchanges.jobs, routingKey: Queues.jobs, body: j, messageId: j.id });
      },
    };
    try {
      await acceptJob(job('phones'), key, through);
      proxy.freeze();
      const [first, second, third] = [job('phones'), job('phones'), job('phones')];
      const firstAnswer = acceptJob(first, key, through).catch((e: unknown) => e);
      await waitFor('the first job handed to RabbitMQ', () => handed.includes(first.id));
      await new Promise((resolve) => setTimeout(resolve, 50));
      // The second goes in the round after the first's (ended by its deadline), the third would go in the one after: past its own deadline.
      expect(await acceptJobs({ jobs: [second, third] }, key, through).catch((e: unknown) => e)).toMatchObject({
        status: 503,
        issues: [
          { path: 'jobs.0.id', message: `job "${second.id}" was not confirmed: it may still arrive; repost it as it was, or cancel it` },
          { path: 'jobs.1.id', message: `job "${third.id}" was not confirmed: it may still arrive; repost it as it was, or cancel it` },
        ],
        message: expect.not.stringMatching(/not sent/) as unknown,
      });
      expect(await firstAnswer).toMatchObject({ status: 503, issues: [{ path: 'id', message: expect.stringMatching(/was not confirmed: it may still arrive/) as unknown }] });
      proxy.thaw();
      expect((await t.db.jobs.get(third.id))?.publishedAt).toBeNull();
      for (const kept of [second, third]) expect(await refusalCode(acceptJob({ ...kept, content: { title: 'corrected' } }, key, deps))).toEqual({ status: 409, code: 'job-id-reused' });
      expect(await acceptJob(third, key, deps)).toEqual({ id: third.id, duplicate: false });
    } finally {
      proxy.thaw();
      await stalling.close();
      await proxy.close();
    }
  });

  // Before, the first post's "not sent" forgot the id under the repost's copy on its way: a DELETE then answered 404, and a corrected repost was taken as a new job beside it.
  it('keeps the id of a job left out of its round while a repost of it, made as the first post waited, is sent: its cancel finds it, a corrected repost is refused', async () => {
    const proxy = await startTcpProxyFor(vhost.amqpUrl);
    // Both deadlines a second, one job a round: each round the broker does not confirm lasts the second.
    const stalling = await connectBroker({ url: proxy.urlFor(vhost.amqpUrl), logger, connectionName: 'job-service-repost', confirmTimeoutMs: 1_000 });
    const publishJob = coalescedPublish(stalling.publisher, { maxBatch: 1, callTimeoutMs: 1_000 });
    const reposted = job('phones');
    const handed: string[] = [];
    /** How each publish of the reposted job ended, in the order they were made: its error's class. */
    const ended: Array<Promise<string>> = [];
    const through: JobServiceDeps = {
      ...deps,
      publish: (j) => {
        handed.push(j.id);
        const publishing = publishJob({ exchange: Exchanges.jobs, routingKey: Queues.jobs, body: j, messageId: j.id });
        if (j.id === reposted.id) ended.push(publishing.then(() => 'confirmed', (e: unknown) => (e as Error).name));
        return publishing;
      },
    };
    const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())));
    try {
      await acceptJob(job('phones'), key, through);
      proxy.freeze();
      const [first, second] = [job('phones'), job('phones')];
      // Round 1 (first) from 0 to 1 s, round 2 (second) from 1 to 2 s, round 3 from 2 s.
      const firstAnswer = acceptJob(first, key, through).catch((e: unknown) => e);
      await waitFor('the first job handed to RabbitMQ', () => handed.includes(first.id));
      const start = performance.now();
      const secondAnswer = acceptJob(second, key, through).catch((e: unknown) => e);
      // Post A at 0.5 s: its deadline, 1.5 s, comes before round 3, and it is left out of it.
      await sleepUntil(start + 500);
      const postA = acceptJob(reposted, key, through).catch((e: unknown) => e);
      // The caller's own timeout is shorter: post B at 1.25 s finds the job recorded, unpublished, and publishes it too; its deadline, 2.25 s, comes after round 3 starts.
      await sleepUntil(start + 1_250);
      const postB = acceptJob(reposted, key, through).catch((e: unknown) => e);
      const answers = await Promise.all([postA, postB, firstAnswer, secondAnswer]);
      // A's call was left out, never sent; B's went in round 3 and got no confirm.
      expect(await Promise.all(ended)).toEqual([PublishNotSentError.name, PublishFailedError.name]);
      proxy.thaw();
      // B's copy is on its way: the id is still the job's, unpublished, for its cancel or a repost as it was.
      expect((await t.db.jobs.get(reposted.id))?.publishedAt).toBeNull();
      expect(await refusalCode(acceptJob({ ...reposted, content: { title: 'corrected' } }, key, deps))).toEqual({ status: 409, code: 'job-id-reused' });
      expect((await cancelJobFully(t.db, reposted.id)).known).toBe(true);
      // Both posts are told so.
      const notConfirmed = { status: 503, issues: [{ path: 'id', message: `job "${reposted.id}" was not confirmed: it may still arrive; repost it as it was, or cancel it` }] };
      expect(answers.slice(0, 2)).toMatchObject([notConfirmed, notConfirmed]);
    } finally {
      proxy.thaw();
      await stalling.close();
      await proxy.close();
    }
  });
});

describe('a batch whose ids were used before', () => {
  it('names every job whose id was accepted before with other content, so one round trip mends it; nothing published, the new job left free', async () => {
    const [first, second, fresh] = [job('phones'), job('phones'), job('phones')];
    await acceptedAndMarked([first, second]);
    published = [];
    const err = await acceptJobs({ jobs: [fresh, { ...first, content: { title: 'edited' } }, { ...second, content: { title: 'edited' } }] }, key, deps).then(() => undefined, (e: unknown) => e);
    expect(err).toMatchObject({
      status: 409,
      code: 'job-id-reused',
      message: expect.stringMatching(/^jobs\.1\.id: .* \(and 1 more reused job id: see issues\)$/) as unknown,
      issues: [{ path: 'jobs.1.id' }, { path: 'jobs.2.id' }],
    });
    expect(published).toEqual([]);
    expect(await acceptJob(fresh, key, deps)).toEqual({ id: fresh.id, duplicate: false });
  });
});

describe('a batch whose record fails part-way (a statement past its timeout)', () => {
  it('records none of its ids, so a corrected retry is taken and published whole, not refused for ids never sent', async () => {
    // An API process whose statements are bounded (DATABASE_QUERY_TIMEOUT_MS), as in production.
    const bounded = createDatabase({ url: t.url, schema: t.schema, queryTimeoutMs: 1_000 });
    const boundedRecords = createJobRecords(bounded.jobs, logger);
    const batch = Array.from({ length: MAX_BATCH_JOBS }, () => job('phones'));
    const last = batch[batch.length - 1] as ReturnType<typeof job>;
    // Another transaction inserted the last job's id and has not committed: the statement recording
    // that id waits for it past its timeout (PostgreSQL cancels it, 57014), as under a lock or a stall.
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = (): void => undefined;
    const holding = new Promise<void>((resolve) => (held = resolve));
    const holder = t.db.kysely
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('jobs').values({ id: last.id, app: 'phones', team: 'other' }).execute();
        held();
        await released;
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    try {
      await holding;
      published = [];
      const err = await acceptJobs({ jobs: batch }, key, { ...deps, jobs: boundedRecords }).then(() => undefined, (e: unknown) => e);
      // Not an ApiError: the server answers it 503 unavailable, "retry".
      expect(err).not.toBeInstanceOf(ApiError);
      expect(isDatabaseUnavailable(err)).toBe(true);
      expect(published).toEqual([]);
    } finally {
      release();
      await holder;
      await boundedRecords.flush();
      await bounded.close();
    }
    // Nothing of it recorded: a cancel finds nothing, and the retry, one job corrected, is new throughout.
    expect(await t.db.kysely.selectFrom('jobs').select('id').where('id', 'in', batch.map((j) => j.id)).execute()).toEqual([]);
    const corrected = batch.map((j, i) => (i === 0 ? { ...j, content: { title: 'corrected' } } : j));
    const answers = await acceptJobs({ jobs: corrected }, key, deps);
    expect(answers.filter((a) => a.duplicate)).toEqual([]);
    expect(new Set(published)).toEqual(new Set(batch.map((j) => j.id)));
    // What was published is what is recorded: the first content under that id is now the reused one.
    expect(await refusalCode(acceptJob(batch[0], key, deps))).toEqual({ status: 409, code: 'job-id-reused' });
    expect(await acceptJob(corrected[0], key, deps)).toEqual({ id: corrected[0]?.id, duplicate: true });
  });
});

describe("a large job's status", () => {
  /** The real records, each status read slowly, as a job of `targeted` pushes (a broadcast's count of millions is what takes time). */
  const slowly = (targeted: number | undefined) => {
    let reads = 0;
    const jobs = createJobRecords({
      ...t.db.jobs,
      status: async (id) => {
        reads += 1;
        const record = await t.db.jobs.status(id);
        await new Promise((r) => setTimeout(r, 300));
        return record === undefined || targeted === undefined ? record : { ...record, job: { ...record.job, targeted } };
      },
    }, logger);
    return { deps: { ...deps, jobs } as JobServiceDeps, reads: () => reads };
  };

  it("is read afresh each time for a small job, however slow the read (a stall, not its count)", async () => {
    const small = job('phones');
    await acceptedAndMarked([small]);
    const { deps: slowDeps, reads } = slowly(undefined);
    await jobStatus(small.id, key, slowDeps);
    await jobStatus(small.id, key, slowDeps);
    expect(reads()).toBe(2);
  });

  it('is read once while a slow count is kept, and afresh after a cancel through this API', async () => {
    const big = job('phones');
    await acceptedAndMarked([big]);
    const { deps: slowDeps, reads: count } = slowly(2_000_000);
    expect((await jobStatus(big.id, key, slowDeps)).targeted).toBe(2_000_000);
    await jobStatus(big.id, key, slowDeps);
    expect(count()).toBe(1);
    await cancelJob(big.id, key, slowDeps);
    await jobStatus(big.id, key, slowDeps);
    expect(count()).toBe(2);
  });
});

describe('the HTTP API: Web Push rules for an app without VAPID keys of its own', () => {
  it('refuses with 400 naming the field when the app has Web Push subscriptions (the web-pusher signs them with its own pair)', async () => {
    const webLimit = expect.stringMatching(/^Web Push: payload is 4\d{3} bytes; Web Push allows 3993 bytes.*; app "site" has Web Push subscriptions$/) as unknown;
    expect(await refusal(acceptJob(job('site', big), key, deps))).toEqual({ status: 400, issues: [{ path: 'content', message: webLimit }] });
    const batch = { jobs: [job('site', { title: 'fine' }), job('site', { title: 'big', web: { payload: { blob: 'x'.repeat(4000) } } })] };
    expect(await refusal(acceptJobs(batch, key, deps))).toEqual({ status: 400, issues: [{ path: 'jobs.1.content.web.payload', message: webLimit }] });
  });

  it('takes the same job for an app without browsers, and a data-only job that does not go to browsers', async () => {
    const forPhones = job('phones', big);
    expect(await acceptJob(forPhones, key, deps)).toEqual({ id: forPhones.id, duplicate: false });
    const dataOnly = job('site', { data: { blob: 'x'.repeat(3900) } });
    expect(await acceptJob(dataOnly, key, deps)).toEqual({ id: dataOnly.id, duplicate: false });
  });
});

describe('the HTTP API: Live Activity pushes of an app that sends to APNs with a certificate', () => {
  // Apple takes them over token-based authentication only; the pusher would park each one (liveactivity-needs-token-auth).
  it('refuses them with 400 naming content.liveActivity, and takes them for an app with a token', async () => {
    for (const id of ['certapp', 'tokenapp']) await t.db.apps.upsert({ id });
    // The sealed secret is never read here: the door looks at the kind of credentials only.
    await t.db.kysely.updateTable('apps').set({ apns_auth: 'certificate', apns_secret: 'sealed' }).where('id', '=', 'certapp').execute();
    await t.db.kysely.updateTable('apps').set({ apns_auth: 'token', apns_secret: 'sealed', apns_key_id: 'KEY1234567', apns_team_id: 'TEAM123456' }).where('id', '=', 'tokenapp').execute();
    const activity = { liveActivity: { event: 'update', contentState: { score: '2-1' } } };
    const both: ApiKeyRow = { ...key, apps: ['certapp', 'tokenapp'] };
    expect(await refusal(acceptJob(job('certapp', activity), both, deps))).toEqual({
      status: 400,
      issues: [{ path: 'content.liveActivity', message: expect.stringMatching(/^app "certapp" sends to APNs with a certificate/) as unknown }],
    });
    const viaToken = job('tokenapp', activity);
    expect(await acceptJob(viaToken, both, deps)).toEqual({ id: viaToken.id, duplicate: false });
    const alert = job('certapp', { title: 'Hi' });
    expect(await acceptJob(alert, both, deps)).toEqual({ id: alert.id, duplicate: false });
  });
});

/** Published and recorded as published (the marks are written in the background). */
async function acceptedAndMarked(jobs: ReturnType<typeof job>[]): Promise<void> {
  const answers = await acceptJobs({ jobs }, key, deps);
  expect(answers.map((a) => a.duplicate)).toEqual(jobs.map(() => false));
  await records.flush();
}

describe('the HTTP API: a retry of a job accepted before, after what it was checked against changed', () => {
  it('is answered as the duplicate it is after its app was disabled, publishing nothing; a new job of the app is refused', async () => {
    const first = job('paused');
    const second = job('paused');
    await acceptedAndMarked([first, second]);
    await t.db.apps.upsert({ id: 'paused', enabled: false });
    published = [];

    const timings: { recordMs?: number } = {};
    expect(await acceptJob(first, key, deps, timings)).toEqual({ id: first.id, duplicate: true });
    expect(timings.recordMs).toBeGreaterThan(0); // the read that found it: Server-Timing's record stage
    expect(await acceptJobs({ jobs: [second, first] }, key, deps)).toEqual([
      { id: second.id, duplicate: true },
      { id: first.id, duplicate: true },
    ]);
    expect(published).toEqual([]);
    // All or none: a batch with one job not accepted before is refused whole.
    expect(await refusalCode(acceptJobs({ jobs: [first, job('paused')] }, key, deps))).toEqual({ status: 422, code: 'app-disabled' });
    expect(await refusalCode(acceptJob(job('paused'), key, deps))).toEqual({ status: 422, code: 'app-disabled' });
    // The same id with other content is no retry.
    expect(await refusalCode(acceptJob({ ...first, content: { title: 'changed' } }, key, deps))).toEqual({ status: 422, code: 'app-disabled' });
    expect(published).toEqual([]);
  });

  // Before, the fallback that answers a retry as its duplicate did not look at the cancel: 200 duplicate, the caller told the job was on its way.
  it('of a job cancelled since is refused 409 job-cancelled, not answered as a duplicate on its way, in a batch too', async () => {
    const first = job('quitting');
    const second = job('quitting');
    await acceptedAndMarked([first, second]);
    expect((await cancelJobFully(t.db, first.id)).known).toBe(true);
    await t.db.apps.upsert({ id: 'quitting', enabled: false });
    published = [];
    expect(await refusalCode(acceptJob(first, key, deps))).toEqual({ status: 409, code: 'job-cancelled' });
    // A batch retried whole: the cancelled one is named, so the caller drops it and reposts the rest (answered as duplicates), not refused whole for the app.
    const refusal = await acceptJobs({ jobs: [second, first] }, key, deps).catch((e: unknown) => e as ApiError);
    expect(refusal).toMatchObject({ status: 409, code: 'job-cancelled', issues: [{ path: 'jobs.1.id' }] });
    expect(await acceptJobs({ jobs: [second] }, key, deps)).toEqual([{ id: second.id, duplicate: true }]);
    expect(published).toEqual([]);
  });

  it("is a duplicate after the app's first browser made its content too large for Web Push; a new job of that content is refused", async () => {
    const first = job('grown', big);
    await acceptedAndMarked([first]);
    await t.db.devices.applyRegistrations([browser('grown', 'bea')]);
    expect(await appHasWebDevices(t.db.kysely, 'grown')).toBe(true);
    published = [];
    expect(await acceptJob(first, key, deps)).toEqual({ id: first.id, duplicate: true });
    expect(await refusalCode(acceptJob(job('grown', big), key, deps))).toEqual({ status: 400, code: 'invalid-request' });
    expect(published).toEqual([]);
  });

  it('is a duplicate while its published mark waits to be written: this process saw it confirmed', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow = createJobRecords({ ...t.db.jobs, markPublished: (jobs) => held.then(() => t.db.jobs.markPublished(jobs)) }, logger);
    const slowDeps = { ...deps, jobs: slow };
    const first = job('held');
    expect(await acceptJob(first, key, slowDeps)).toEqual({ id: first.id, duplicate: false });
    await t.db.apps.upsert({ id: 'held', enabled: false });
    try {
      expect(await acceptJob(first, key, slowDeps)).toEqual({ id: first.id, duplicate: true });
      // The same id with other content, or for another app, is no repost of it.
      expect(await refusalCode(acceptJob({ ...first, content: { title: 'changed' } }, key, slowDeps))).toEqual({ status: 422, code: 'app-disabled' });
      expect(await refusalCode(acceptJob({ ...first, app: 'paused' }, key, slowDeps))).toEqual({ status: 422, code: 'app-disabled' });
    } finally {
      release();
      await slow.flush();
    }
  });

  it('is a duplicate after the scheduling horizon was shortened below its deliverAt; a new job that far ahead is refused', async () => {
    const far = { at: new Date(Date.now() + 200 * 86_400_000).toISOString() };
    const first = { ...job('site'), deliverAt: far };
    expect(await acceptJob(first, key, { ...deps, scheduleHorizonDays: 365 })).toEqual({ id: first.id, duplicate: false });
    await records.flush();
    const shorter = { ...deps, scheduleHorizonDays: 90 };
    expect(await acceptJob(first, key, shorter)).toEqual({ id: first.id, duplicate: true });
    expect(await refusal(acceptJob({ ...job('site'), deliverAt: far }, key, shorter))).toEqual({
      status: 400,
      issues: [{ path: 'deliverAt', message: expect.stringMatching(/more than 90 days ahead$/) as unknown }],
    });
    expect(await refusal(acceptJobs({ jobs: [job('site'), { ...job('site'), deliverAt: far }] }, key, shorter))).toEqual({
      status: 400,
      issues: [{ path: 'jobs.1.deliverAt', message: expect.stringMatching(/more than 90 days ahead$/) as unknown }],
    });
  });

  it('of a job the demuxer parked is no duplicate: refused while its app is still disabled, published again once enabled (a repost over AMQP takes the parked row over alike)', async () => {
    const parked = job('parking');
    const sent = job('parking');
    await acceptedAndMarked([parked, sent]);
    await t.db.apps.upsert({ id: 'parking', enabled: false });
    await t.db.jobs.recordJobParks([{ id: parked.id, app: 'parking', code: 'app-disabled', reason: 'app "parking" is disabled' }]);
    published = [];
    expect(await refusalCode(acceptJob(parked, key, deps))).toEqual({ status: 422, code: 'app-disabled' });
    expect(await acceptJob(sent, key, deps)).toEqual({ id: sent.id, duplicate: true });
    expect(published).toEqual([]);

    await t.db.apps.upsert({ id: 'parking', enabled: true });
    expect(await acceptJobs({ jobs: [sent, parked] }, key, deps)).toEqual([
      { id: sent.id, duplicate: true },
      { id: parked.id, duplicate: false },
    ]);
    expect(published).toEqual([parked.id]);
  });

  it('of a job parked at the delivery limit is its duplicate: its message kept killing the demuxers, and a repost is not another round', async () => {
    const poison = job('parking');
    await acceptedAndMarked([poison]);
    await t.db.jobs.recordJobParks([{ id: poison.id, app: 'parking', code: 'delivery-limit', reason: 'redelivered 50 times' }]);
    published = [];
    expect(await acceptJob(poison, key, deps)).toEqual({ id: poison.id, duplicate: true });
    expect(published).toEqual([]);
  });

  it('is a duplicate when the clock has passed its expiry since (a retry of a job accepted just in time, its answer lost); a new job of it is refused', async () => {
    const t0 = Date.now();
    const deliverAt = { at: new Date(t0 + 60_000).toISOString(), expiresAfter: 'PT5M' };
    const first = { ...job('site'), deliverAt };
    expect(await acceptJob(first, key, { ...deps, now: () => new Date(t0) })).toEqual({ id: first.id, duplicate: false });
    await records.flush();
    const later = { ...deps, now: () => new Date(t0 + 7 * 60_000) };
    published = [];
    expect(await acceptJob(first, key, later)).toEqual({ id: first.id, duplicate: true });
    expect(await acceptJobs({ jobs: [first] }, key, later)).toEqual([{ id: first.id, duplicate: true }]);
    expect(published).toEqual([]);
    expect(await refusal(acceptJob({ ...job('site'), deliverAt }, key, later))).toEqual({
      status: 400,
      issues: [{ path: 'deliverAt.expiresAfter', message: expect.any(String) as unknown }],
    });
    expect(await refusal(acceptJobs({ jobs: [job('site'), { ...job('site'), deliverAt }] }, key, later))).toEqual({
      status: 400,
      issues: [{ path: 'jobs.1.deliverAt.expiresAfter', message: expect.any(String) as unknown }],
    });
  });

  it("is a duplicate when it was accepted before a rule its content breaks (a data key collapse_key); a new job of that content is refused naming the field", async () => {
    const content = { title: 'hi', data: { collapse_key: 'x' } };
    const before = { ...job('site'), content };
    // As an earlier release recorded and published it.
    const record = { id: before.id, app: 'site', team: 'team', contentHash: jobContentHash(PushJob.parse(before)) };
    await t.db.jobs.accept([record]);
    await t.db.jobs.markPublished([record]);
    published = [];
    expect(await acceptJob(before, key, deps)).toEqual({ id: before.id, duplicate: true });
    expect(await refusal(acceptJob(job('site', content), key, deps))).toEqual({
      status: 400,
      issues: [{ path: 'content.data.collapse_key', message: expect.stringMatching(/^is reserved: the Firebase Android SDK/) as unknown }],
    });
    expect(await refusal(acceptJobs({ jobs: [job('site'), job('site', content)] }, key, deps))).toEqual({
      status: 400,
      issues: [{ path: 'jobs.1.content.data.collapse_key', message: expect.any(String) as unknown }],
    });
    expect(published).toEqual([]);
  });

  it('is refused with 403 to a key that lost the app, duplicate or not: a key learns nothing of apps it may not use', async () => {
    const first = job('site');
    await acceptedAndMarked([first]);
    const other: ApiKeyRow = { ...key, apps: ['other'] };
    expect(await refusalCode(acceptJob(first, other, deps))).toEqual({ status: 403, code: expect.any(String) as unknown });
  });
});
