import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { derivePushId, type DevicePush } from '@herald/contracts';
import { createSpecDatabase, specDevicePush, type SpecDatabase } from './spec-database.ts';
import { cancelJob, cancelJobFully } from './cancel-job.ts';
import { toJobStatus } from './job-status-view.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('jobstatus');
  await t.db.apps.upsert({ id: 'demo' });
});
afterAll(() => t.drop());

const devicePush = (jobId: string, deviceId: string, token = `tok-${deviceId}`): DevicePush => specDevicePush(jobId, deviceId, { token });

describe('job status: every device push counted once', () => {
  it('writes the demuxer outcomes with the job, counts parks per code, and keeps a delivery delivered', async () => {
    const job = randomUUID();
    const p = (d: string) => derivePushId(job, d);
    await t.db.jobs.recordDemux([
      {
        id: job,
        app: 'demo',
        targeted: 8,
        outcome: 'fanned-out',
        noDevice: 1,
        pushes: [
          {
            pushId: p('1'),
            jobId: job,
            outcome: 'opted-out',
            code: 'opted-out',
            reason: 'the user opted out of category "news"',
            platform: 'fcm',
            deviceId: '1',
          },
          { pushId: p('2'), jobId: job, outcome: 'muted', platform: 'apns', deviceId: '2' },
        ],
      },
    ]);
    await t.db.jobs.recordOutcomes([
      { pushId: p('3'), jobId: job, outcome: 'delivered', providerMessageId: 'apns-id-3' },
      { pushId: p('4'), jobId: job, outcome: 'parked', code: 'retries-exhausted', reason: '503' },
      { pushId: p('5'), jobId: job, outcome: 'parked', code: 'delivery-limit', reason: 'delivered 51 times' },
      { pushId: p('6'), jobId: job, outcome: 'failed', code: 'provider-rejected', reason: 'PayloadTooLarge' },
    ]);
    // A later copy of a delivered push (a duplicate parked at the door) does not undo the delivery.
    await t.db.jobs.recordOutcomes([{ pushId: p('3'), jobId: job, outcome: 'parked', code: 'app-disabled' }]);
    const s = await t.db.jobs.status(job);
    expect(s).toMatchObject({
      job: { targeted: 8, noDevice: 1, demuxOutcome: 'fanned-out', demuxReason: null },
      outcomes: { 'opted-out': 1, muted: 1, delivered: 1, parked: 2, failed: 1 },
      parkedBy: { 'retries-exhausted': 1, 'delivery-limit': 1 },
      scheduled: 0,
    });
  });

  it('counts a job fanned out twice as the union of both, whether a device was invalidated or registered in between', async () => {
    // Invalidated: 3 pushes made the first time; the second finds one user without a device.
    const gone = randomUUID();
    await t.db.jobs.recordDemux([{ id: gone, app: 'demo', targeted: 3, outcome: 'fanned-out', noDevice: 0 }]);
    await t.db.jobs.recordDemux([{ id: gone, app: 'demo', targeted: 3, outcome: 'fanned-out', noDevice: 1 }]);
    expect((await t.db.jobs.status(gone))?.job).toMatchObject({ targeted: 3, noDevice: 0 });
    // Registered: a user without a device the first time has one (and a push) the second.
    const added = randomUUID();
    await t.db.jobs.recordDemux([{ id: added, app: 'demo', targeted: 2, outcome: 'fanned-out', noDevice: 1 }]);
    await t.db.jobs.recordDemux([{ id: added, app: 'demo', targeted: 2, outcome: 'fanned-out', noDevice: 0 }]);
    expect((await t.db.jobs.status(added))?.job).toMatchObject({ targeted: 2, noDevice: 0 });
    // A device more for a user who had one: the larger fan-out.
    const more = randomUUID();
    await t.db.jobs.recordDemux([{ id: more, app: 'demo', targeted: 2, outcome: 'fanned-out', noDevice: 0 }]);
    await t.db.jobs.recordDemux([{ id: more, app: 'demo', targeted: 3, outcome: 'fanned-out', noDevice: 0 }]);
    expect((await t.db.jobs.status(more))?.job).toMatchObject({ targeted: 3, noDevice: 0 });
  });

  it("records the demuxer's park of a job with its reason; a fan-out (a replay) clears it, and a park never hides a fan-out", async () => {
    const job = randomUUID();
    await t.db.jobs.accept([{ id: job, app: 'demo', team: 't' }]);
    await t.db.jobs.recordJobParks([{ id: job, app: 'demo', code: 'app-disabled', reason: 'app "demo" is disabled' }]);
    expect((await t.db.jobs.status(job))?.job).toMatchObject({
      targeted: 0,
      demuxOutcome: 'parked: app-disabled',
      demuxReason: 'app "demo" is disabled',
    });
    await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 2, outcome: 'fanned-out' }]);
    await t.db.jobs.recordJobParks([{ id: job, app: 'demo', code: 'delivery-limit', reason: 'a duplicate kept failing' }]);
    expect((await t.db.jobs.status(job))?.job).toMatchObject({ targeted: 2, demuxOutcome: 'fanned-out', demuxReason: null });
    // A job never seen before (published over AMQP) gets its row from the park.
    const stranger = randomUUID();
    await t.db.jobs.recordJobParks([{ id: stranger, app: 'nosuch', code: 'unknown-app', reason: 'unknown app "nosuch"' }]);
    expect((await t.db.jobs.status(stranger))?.job).toMatchObject({
      app: 'nosuch',
      targeted: 0,
      demuxOutcome: 'parked: unknown-app',
    });
  });

  it('moves cancelled and expired scheduled pushes to their outcomes in the same transaction', async () => {
    const job = randomUUID();
    await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 3, outcome: 'fanned-out' }]);
    const later = new Date(Date.now() + 3_600_000);
    await t.db.scheduled.schedule(['a', 'b'].map((d) => ({ dueAt: later, push: devicePush(job, d) })));
    const expiring = { ...devicePush(job, 'c'), expiresAt: new Date(Date.now() - 1000).toISOString() };
    await t.db.scheduled.schedule([{ dueAt: new Date(Date.now() - 500), push: expiring }]);
    expect((await t.db.jobs.status(job))?.scheduled).toBe(3);
    // The release's outcomes commit with the claim; a release that throws leaves both untouched.
    await expect(
      t.db.scheduled.withDueBatch('apns', new Date(), 10, async () => Promise.reject(new Error('broker down'))),
    ).rejects.toThrow('broker down');
    expect((await t.db.jobs.status(job))?.scheduled).toBe(3);
    await t.db.scheduled.withDueBatch('apns', new Date(), 10, async (rows) => ({
      outcomes: rows.map((r) => ({
        pushId: r.pushId,
        jobId: r.jobId,
        outcome: 'expired' as const,
        platform: 'apns',
        deviceId: 'c',
      })),
    }));
    expect(await cancelJob(t.db, job)).toBe(2);
    const s = await t.db.jobs.status(job);
    expect(s).toMatchObject({ scheduled: 0, outcomes: { expired: 1, cancelled: 2 } });
    const pushes = await t.db.jobs.pushes(job, { limit: 10 });
    expect(
      pushes
        .filter((x) => x.outcome === 'cancelled')
        .map((x) => x.deviceId)
        .sort(),
    ).toEqual(['a', 'b']);
  });

  it("lists a job's pushes in push id order, a page at a time, with scheduled ones and the device's token", async () => {
    const job = randomUUID();
    await t.db.devices.applyRegistration({
      version: 1,
      kind: 'register',
      app: 'demo',
      platform: 'apns',
      token: 'ab'.repeat(32),
      userId: 'lister',
      eventAt: new Date().toISOString(),
    });
    const [device] =
      (await t.db.devices.findTargets([{ key: 'k', app: 'demo', userIds: ['lister'], category: 'c' }], new Date())).get('k') ??
      [];
    const deviceIds = [device?.deviceId ?? '', ...Array.from({ length: 6 }, (_, i) => `gone-${i}`)];
    await t.db.jobs.recordOutcomes(
      deviceIds
        .slice(0, 5)
        .map((d) => ({
          pushId: derivePushId(job, d),
          jobId: job,
          outcome: 'delivered',
          providerMessageId: `m-${d}`,
          platform: 'apns',
          deviceId: d,
        })),
    );
    await t.db.scheduled.schedule(
      deviceIds.slice(5).map((d) => ({ dueAt: new Date(Date.now() + 3_600_000), push: devicePush(job, d) })),
    );
    const seen: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 10; page++) {
      const rows = await t.db.jobs.pushes(job, { limit: 3, ...(after !== undefined && { after }) });
      seen.push(...rows.map((r) => r.pushId));
      if (rows.length < 3) break;
      after = rows[rows.length - 1]?.pushId;
    }
    expect(seen).toEqual(deviceIds.map((d) => derivePushId(job, d)).sort());
    const all = await t.db.jobs.pushes(job, { limit: 100 });
    const mine = all.find((r) => r.deviceId === device?.deviceId);
    expect(mine).toMatchObject({
      outcome: 'delivered',
      token: 'ab'.repeat(32),
      providerMessageId: `m-${device?.deviceId ?? ''}`,
      platform: 'apns',
    });
    expect(all.filter((r) => r.outcome === 'scheduled')).toHaveLength(2);
    expect(all.find((r) => r.outcome === 'scheduled')?.dueAt).toBeInstanceOf(Date);
    expect(all.find((r) => r.deviceId === 'gone-0')?.token).toBeNull();
  });

  it('cancelling a done job: one whose every push was delivered stays done; one with a failed or parked push is marked, so a replay drops it', async () => {
    const state = async (job: string) => toJobStatus((await t.db.jobs.status(job)) ?? expect.fail('no job')).state;
    const done = async (outcome: 'delivered' | 'failed' | 'parked') => {
      const job = randomUUID();
      await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 2, outcome: 'fanned-out' }]);
      await t.db.jobs.recordOutcomes([
        { pushId: derivePushId(job, 'a'), jobId: job, outcome: 'delivered' },
        { pushId: derivePushId(job, 'b'), jobId: job, outcome, ...(outcome !== 'delivered' && { code: outcome === 'failed' ? 'provider-rejected' : 'retries-exhausted' }) },
      ]);
      expect(await state(job)).toBe('done');
      return job;
    };
    const delivered = await done('delivered');
    expect(await cancelJobFully(t.db, delivered)).toMatchObject({ known: true, alreadyDone: true });
    expect(await state(delivered)).toBe('done');
    for (const outcome of ['failed', 'parked'] as const) {
      const job = await done(outcome);
      expect(await cancelJobFully(t.db, job), outcome).toMatchObject({ known: true, alreadyDone: false });
      expect(await state(job), outcome).toBe('cancelled');
    }
  });
});
