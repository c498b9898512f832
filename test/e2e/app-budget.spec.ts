import { parkedQueueFor, sendQueueFor } from '@herald/contracts';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { job } from '../support/fixtures.ts';
import { metric } from '../support/metrics.ts';
import { clockSecondOf, perSecond, seedAppDevices } from '../support/rate-measure.ts';
import { sandboxRecords, type SandboxRecord } from '../support/sandbox-client.ts';
import { DEMO_APP, startSystem, type System } from '../support/system.ts';

const BIG = DEMO_APP.id;
const OTHER = { id: 'other', apnsTopic: 'com.herald.other' };
const BIG_LIMIT = 50;
const BIG_DEVICES = 400;
const OTHER_DEVICES = 10;


const tokenOf = (r: SandboxRecord): string => r.path.split('/').pop() ?? '';
const at = (r: SandboxRecord): number => Date.parse(r.receivedAt);

describe("an app's own budget paces that app, and no other", () => {
  let sys: System;
  beforeAll(async () => {
    // Delay queues up to 10 s, as production has longer ones: a push deferred to its turn comes
    // back then, not at the tests' usual 400 ms (which would bring them all back at once).
    sys = await startSystem({ only: ['demuxer', 'apns-pusher'], env: { RATE_LIMIT_REFRESH_MS: '100' }, retryDelaysMs: [200, 400, 1000, 3000, 10_000] });
    await sys.database.db.apps.upsert(OTHER);
    await sys.database.db.rateLimits.set({ platform: 'apns', app: BIG }, BIG_LIMIT);
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it(`a broadcast of an app limited to ${BIG_LIMIT}/s goes at that rate while another app's pushes go at once; nothing lost, nothing sent twice`, async () => {
    // Before, the pusher's whole window filled with the broadcast's pushes waiting for their app's
    // budget, and the other app's pushes, queued behind them, went at the broadcast's pace.
    const big = await seedAppDevices(sys, BIG, 'big', BIG_DEVICES);
    const others = await seedAppDevices(sys, OTHER.id, 'other', OTHER_DEVICES);
    await sys.client.publishPushJob(job({ app: BIG, userIds: big.map((d) => d.user) }));
    const pusher = sys.service('apns-pusher');
    await waitFor('the broadcast under way', async () => (await metric(pusher, 'herald_pushes_total', { app: BIG, outcome: 'delivered' })) >= BIG_LIMIT, { timeoutMs: 20_000, intervalMs: 100 });
    const publishedAt = Date.now();
    await sys.client.publishPushJob(job({ app: OTHER.id, userIds: others.map((d) => d.user) }));

    const all = [...big, ...others];
    const records = await waitFor(
      'every push delivered',
      async () => {
        const got = (await sandboxRecords(sys.sandbox, { platform: 'apns' })).filter((r) => r.status === 200);
        return got.length >= all.length && got;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    // Exactly once each.
    expect(records.map(tokenOf).sort()).toEqual(all.map((d) => d.token).sort());

    const otherTokens = new Set(others.map((d) => d.token));
    const otherSends = records.filter((r) => otherTokens.has(tokenOf(r))).map((r) => at(r) - publishedAt);
    const bigTimes = records.filter((r) => !otherTokens.has(tokenOf(r))).map(at).sort((a, b) => a - b);
    const bigSeconds = perSecond(bigTimes, clockSecondOf(bigTimes[0] as number));
    console.log(JSON.stringify({ otherAppSendsMsAfterPublish: otherSends.sort((a, b) => a - b), bigPerSecond: bigSeconds }));
    // The other app is not queued behind the broadcast's remaining ~300 pushes (6 s at its rate).
    expect(Math.max(...otherSends)).toBeLessThan(2500);
    // The broadcast keeps to its budget (+ one window's share), and uses it.
    expect(Math.max(...bigSeconds)).toBeLessThanOrEqual(BIG_LIMIT + BIG_LIMIT / 10);
    const meanRate = (bigTimes.length - 1) / (((bigTimes[bigTimes.length - 1] as number) - (bigTimes[0] as number)) / 1000);
    expect(meanRate).toBeGreaterThanOrEqual(0.8 * BIG_LIMIT);
    // Its pushes waited their turn deferred, spending no attempt: nothing retried or parked.
    expect(await metric(pusher, 'herald_rate_limit_app_over_budget_total')).toBeGreaterThan(0);
    expect(await metric(pusher, 'herald_pushes_total', { outcome: 'retried' })).toBe(0);
    expect(await metric(pusher, 'herald_pushes_total', { outcome: 'parked' })).toBe(0);
    expect(await peekMessages(sys.vhost.name, parkedQueueFor(sendQueueFor('apns')), 10)).toEqual([]);
  });
});
