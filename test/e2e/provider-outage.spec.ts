import { Queues, parkedQueueFor } from '@herald/contracts';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { job } from '../support/fixtures.ts';
import { metric } from '../support/metrics.ts';
import { seedAppDevices } from '../support/rate-measure.ts';
import { clearFaults, delivered, injectFault, sandboxRecords } from '../support/sandbox-client.ts';
import { DEMO_APP, startSystem, type System } from '../support/system.ts';

const LANE = { platform: 'apns', lane: 'apns (shared connection)' };

/**
 * APNs answering every push 503 (no Retry-After), for longer than the whole retry schedule: the
 * pusher takes its lane down and holds the pushes (no attempt spent, nothing parked), tries the
 * lane once a second (PROVIDER_DOWN_PROBE_MS), and delivers every push once when APNs is back
 * (PROVIDER_DOWN_AFTER_MS 0: the 30 pushes fail at once, the burst a single dropped connection
 * would make, which by default is not yet an outage).
 */
describe('a provider outage longer than the retry schedule', () => {
  let sys: System;
  beforeAll(async () => {
    sys = await startSystem({ only: ['demuxer', 'apns-pusher'], env: { PROVIDER_DOWN_PROBE_MS: '1000', PROVIDER_DOWN_AFTER_MS: '0' } });
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it('parks nothing: the pushes are held while APNs fails them, then each is delivered once', async () => {
    const devices = await seedAppDevices(sys, DEMO_APP.id, 'outage', 30);
    await injectFault(sys.sandbox, { platform: 'apns', error: 'ServiceUnavailable' });
    await sys.client.publishPushJob(job({ userIds: devices.map((d) => d.user) }));
    const pusher = sys.service('apns-pusher');
    await waitFor('the lane down, its pushes held', async () => (await metric(pusher, 'herald_provider_lane_down', LANE)) === 1 && (await metric(pusher, 'herald_pushes_total', { outcome: 'held' })) >= 30);
    // Three times the test's retry schedule (200 + 400 ms) later: nothing retried to its end, nothing parked.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await peekMessages(sys.vhost.name, parkedQueueFor(Queues.apnsSend), 100)).toEqual([]);
    expect(await metric(pusher, 'herald_pushes_total', { outcome: 'parked' })).toBe(0);
    // The first attempts, and about one trial a second since: not every push's schedule.
    expect((await sandboxRecords(sys.sandbox, { platform: 'apns' })).length).toBeLessThan(30 + 10);

    await clearFaults(sys.sandbox);
    await waitFor('every push delivered', async () => (await delivered(sys.sandbox, { platform: 'apns' })).length >= 30, { timeoutMs: 30_000 });
    const tokens = (await delivered(sys.sandbox, { platform: 'apns' })).map((r) => r.path.split('/').pop());
    expect(new Set(tokens)).toEqual(new Set(devices.map((d) => d.token)));
    expect(tokens).toHaveLength(30);
    expect(await metric(pusher, 'herald_provider_lane_down', LANE)).toBe(0);
    expect(await peekMessages(sys.vhost.name, parkedQueueFor(Queues.apnsSend), 100)).toEqual([]);
  }, 60_000);
});
