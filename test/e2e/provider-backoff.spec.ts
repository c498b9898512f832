import { parkedQueueFor, sendQueueFor } from '@herald/contracts';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fcmToken, job } from '../support/fixtures.ts';
import { metric } from '../support/metrics.ts';
import { injectFault, sandboxRecords, type SandboxRecord } from '../support/sandbox-client.ts';
import { DEMO_APP, startExtraService, startSystem, type System } from '../support/system.ts';

const PAUSED = DEMO_APP.id;
const OTHER = { id: 'other', apnsTopic: 'com.herald.other' };
const RETRY_AFTER_S = 5;


/** FCM devices of an app, registered for users `<label>-<n>`. */
async function seedFcmDevices(sys: System, app: string, label: string, count: number): Promise<Array<{ user: string; token: string }>> {
  const eventAt = new Date().toISOString();
  const devices = Array.from({ length: count }, (_, i) => ({ user: `${label}-${i}`, token: fcmToken() }));
  await sys.database.db.devices.applyRegistrations(devices.map((d) => ({ version: 1, kind: 'register', app, platform: 'fcm', token: d.token, userId: d.user, eventAt }) as const));
  return devices;
}

const tokenOf = (r: SandboxRecord): string => String((r.body['message'] as { token?: unknown } | undefined)?.token ?? '');
const at = (r: SandboxRecord): number => Date.parse(r.receivedAt);
const pushers = (sys: System) => [...sys.services.values()].filter((s) => s.name.startsWith('fcm-pusher'));
const sum = async (sys: System, name: string, labels: Record<string, string>) =>
  (await Promise.all(pushers(sys).map((p) => metric(p, name, labels)))).reduce((a, b) => a + b, 0);

describe('a provider Retry-After holds that app back, in every pusher, and no other app', () => {
  let sys: System;
  beforeAll(async () => {
    // Pushers read the fleet's pauses at each limiter refresh; a 100 ms refresh keeps the other
    // pusher's lag well below the test's. The throttled push itself waits its Retry-After in the
    // delay queue of the longest waits (the test's schedule, 200/400 ms, is shorter). One push a
    // message, so RabbitMQ hands the paused app's later pushes to both pushers.
    // FCM's QUOTA_EXCEEDED with Retry-After: the app's Firebase project quota, Google's documented
    // answer with one (one device's 429, APNs' TooManyRequests, pauses nobody: the push itself waits).
    sys = await startSystem({ only: ['demuxer', 'fcm-pusher'], env: { RATE_LIMIT_REFRESH_MS: '100', PUSH_PACK_SIZE: '1' } });
    await sys.database.db.apps.upsert(OTHER);
    await startExtraService(sys, 'fcm-pusher');
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it(`Retry-After: ${RETRY_AFTER_S} pauses the app ≥ ${RETRY_AFTER_S} s fleet-wide; nothing lost, nothing sent twice, no attempt spent on waiting`, async () => {
    const [first] = await seedFcmDevices(sys, PAUSED, 'first', 1);
    const later = await seedFcmDevices(sys, PAUSED, 'later', 8);
    const others = await seedFcmDevices(sys, OTHER.id, 'other', 8);
    if (first === undefined) throw new Error('no device seeded');

    // One 429 QUOTA_EXCEEDED with Retry-After: 5 for the first push of the paused app.
    await injectFault(sys.sandbox, {
      platform: 'fcm',
      token: first.token,
      error: 'QUOTA_EXCEEDED',
      retryAfterSeconds: RETRY_AFTER_S,
      times: 1,
    });
    await sys.client.publishPushJob(job({ app: PAUSED, userIds: [first.user] }));
    const throttled = await waitFor('the 429', async () =>
      (await sandboxRecords(sys.sandbox, { platform: 'fcm', token: first.token })).find((r) => r.status === 429),
    );
    const pausedAt = at(throttled);

    // The pusher that got it paused the app; the other one learnt it from the store.
    await waitFor(
      'the pause known to both pushers',
      async () => (await sum(sys, 'herald_rate_limit_app_pauses_total', { app: PAUSED, source: 'fleet' })) === 1,
    );
    expect(await sum(sys, 'herald_rate_limit_app_pauses_total', { app: PAUSED, source: 'provider' })).toBe(1);

    // Meanwhile: more pushes for the paused app, and pushes for another app, through both pushers.
    const publishedAt = Date.now();
    await sys.client.publishPushJob(job({ app: PAUSED, userIds: later.map((d) => d.user) }));
    await sys.client.publishPushJob(job({ app: OTHER.id, userIds: others.map((d) => d.user) }));

    const all = [first, ...later, ...others];
    const records = await waitFor(
      'every push delivered',
      async () => {
        const got = (await sandboxRecords(sys.sandbox, { platform: 'fcm' })).filter((r) => r.status === 200);
        return got.length >= all.length && got;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    // Exactly once each: one 200 per device, and the throttled push one 429 before it.
    expect(records.map(tokenOf).sort()).toEqual(all.map((d) => d.token).sort());
    expect((await sandboxRecords(sys.sandbox, { platform: 'fcm', token: first.token })).map((r) => r.status)).toEqual([
      429, 200,
    ]);

    const pausedTokens = new Set([first, ...later].map((d) => d.token));
    const pausedSends = records.filter((r) => pausedTokens.has(tokenOf(r))).map((r) => at(r) - pausedAt);
    const otherSends = records.filter((r) => !pausedTokens.has(tokenOf(r))).map((r) => at(r) - publishedAt);
    console.log(
      JSON.stringify({
        pausedAppSendsMsAfter429: pausedSends.sort((a, b) => a - b),
        otherAppSendsMsAfterPublish: otherSends.sort((a, b) => a - b),
      }),
    );
    // The paused app: nothing sent until Retry-After has passed since the 429, by either pusher.
    expect(Math.min(...pausedSends)).toBeGreaterThanOrEqual(RETRY_AFTER_S * 1000);
    // The other app: sent at once, while the paused app was still waiting.
    expect(Math.max(...otherSends)).toBeLessThan(1500);
    expect(Math.max(...records.filter((r) => !pausedTokens.has(tokenOf(r))).map(at))).toBeLessThan(
      pausedAt + RETRY_AFTER_S * 1000,
    );

    // Both pushers held pushes of the paused app back (deferred, not failed): the one retry is
    // the 429 itself, nothing parked, although TEST_RETRY_DELAYS_MS allows only two attempts.
    for (const p of pushers(sys)) expect(await metric(p, 'herald_rate_limit_held_total'), p.name).toBeGreaterThan(0);
    expect(await sum(sys, 'herald_pushes_total', { app: PAUSED, outcome: 'retried' })).toBe(1);
    expect(await sum(sys, 'herald_pushes_total', { outcome: 'parked' })).toBe(0);
    expect(await sum(sys, 'herald_pushes_total', { outcome: 'failed' })).toBe(0);
    expect(await peekMessages(sys.vhost.name, parkedQueueFor(sendQueueFor('fcm')), 10)).toEqual([]);
  });
});
