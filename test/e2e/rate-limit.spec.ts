import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apnsToken, job } from '../support/fixtures.ts';
import { metric } from '../support/metrics.ts';
import { sandboxRecords, type SandboxRecord } from '../support/sandbox-client.ts';
import { DEMO_APP, startExtraService, startSystem, type System } from '../support/system.ts';

const LIMIT = 500;
/** One lease slice at 500/s: a 100 ms window's share. */
const SLICE = LIMIT / 10;
const BACKLOG = 20_000;
const run = promisify(execFile);

/** Devices straight into the database, in bulk (the Registrar is not what this test is about). */
async function seedDevices(sys: System, count: number): Promise<string[]> {
  const users = Array.from({ length: count }, (_, i) => `rl-user-${i}`);
  const eventAt = new Date().toISOString();
  for (let i = 0; i < count; i += 2000) {
    await sys.database.db.devices.applyRegistrations(
      users.slice(i, i + 2000).map((userId) => ({ version: 1, kind: 'register', app: DEMO_APP.id, platform: 'apns', token: apnsToken(), userId, eventAt })),
    );
  }
  return users;
}

async function deliveredSoFar(sys: System): Promise<number> {
  const pushers = [...sys.services.values()].filter((s) => s.name.startsWith('apns-pusher') && s.running);
  const counts = await Promise.all(pushers.map((p) => metric(p, 'herald_pushes_total', { outcome: 'delivered' })));
  return counts.reduce((a, b) => a + b, 0);
}

/** Accepted requests received after sequence number `afterSeq`, as receive times in ms. */
async function receiveTimes(sys: System, afterSeq: number): Promise<{ times: number[]; tokens: string[] }> {
  const records = (await sandboxRecords(sys.sandbox, { platform: 'apns' })).filter((r: SandboxRecord) => r.seq > afterSeq && r.status === 200);
  return { times: records.map((r) => Date.parse(r.receivedAt)).sort((a, b) => a - b), tokens: records.map((r) => r.path) };
}

/** Counts per 1-second window starting at `from` (window k: [from + k s, from + (k+1) s)). */
function perSecond(times: readonly number[], from: number): number[] {
  const counts: number[] = [];
  for (const t of times) {
    const k = Math.floor((t - from) / 1000);
    counts[k] = (counts[k] ?? 0) + 1;
  }
  return Array.from(counts, (c) => c ?? 0);
}

/** The most receives in any 1-second span (sliding). */
function maxInAnySecond(times: readonly number[]): number {
  let max = 0;
  for (let lo = 0, hi = 0; hi < times.length; hi++) {
    while ((times[hi] as number) - (times[lo] as number) >= 1000) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

const lastSeq = async (sys: System): Promise<number> => Math.max(0, ...(await sandboxRecords(sys.sandbox, { platform: 'apns' })).map((r) => r.seq));

describe('one outbound rate limit shared by every pusher process', () => {
  let sys: System;
  let users: string[];
  beforeAll(async () => {
    sys = await startSystem({ only: ['demuxer'] });
    users = await seedDevices(sys, BACKLOG / 2);
    await sys.database.db.rateLimits.set({ platform: 'apns' }, LIMIT);
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it(`three pushers drain ${BACKLOG} pushes at ≤ ${LIMIT}/s per second (+ one slice) and ≥ 95% of it on average`, async () => {
    // Two jobs × 10,000 users: a 20,000-push backlog piles up, then three pushers start on it at once.
    await sys.client.publishPushJob(job({ userIds: users }));
    await sys.client.publishPushJob(job({ userIds: users }));
    const demuxer = sys.service('demuxer');
    await waitFor('the backlog queued', async () => (await metric(demuxer, 'herald_demuxer_device_pushes_total')) >= BACKLOG, { timeoutMs: 30_000, intervalMs: 200 });
    await Promise.all([1, 2, 3].map(() => startExtraService(sys, 'apns-pusher')));
    // Progress from the pushers' metrics: reading the sandbox's records now would stall the
    // sandbox (it runs in this process) and bunch up the very timestamps being measured.
    await waitFor('the whole backlog delivered', async () => (await deliveredSoFar(sys)) >= BACKLOG, { timeoutMs: 60_000, intervalMs: 500 });
    const { times, tokens } = await receiveTimes(sys, 0);
    expect(times).toHaveLength(BACKLOG);
    expect(new Set(tokens).size).toBe(BACKLOG / 2);
    const first = times[0] as number;
    const last = times[times.length - 1] as number;
    const seconds = perSecond(times, first);
    const meanRate = (times.length - 1) / ((last - first) / 1000);
    const sliding = maxInAnySecond(times.slice(times.findIndex((t) => t >= first + 1000)));
    console.log(JSON.stringify({ perSecond: seconds, meanRate: Math.round(meanRate), maxAlignedAfterFirst: Math.max(...seconds.slice(1)), maxSliding: sliding }));
    for (const [k, count] of seconds.entries()) if (k > 0) expect(count, `second ${k}`).toBeLessThanOrEqual(LIMIT + SLICE);
    expect(meanRate).toBeGreaterThanOrEqual(0.95 * LIMIT);
    expect(meanRate).toBeLessThanOrEqual(LIMIT * 1.05); // the startup second (connections opening) may bunch up
  });

  it('a limit changed with `herald limits set` takes effect within seconds, without restarts', async () => {
    const env = { ...process.env, DATABASE_URL: sys.database.url, DATABASE_SCHEMA: sys.database.schema };
    await run(process.execPath, ['apps/cli/bin/herald.mjs', 'limits', 'set', '--platform', 'apns', '--rate', '100'], { env });
    await new Promise((r) => setTimeout(r, 1500));
    const from = await lastSeq(sys);
    const deliveredBefore = await deliveredSoFar(sys);
    await sys.client.publishPushJob(job({ userIds: users.slice(0, 3000) }));
    await waitFor('pushes flowing at the low limit', async () => (await deliveredSoFar(sys)) - deliveredBefore >= 350, { timeoutMs: 15_000, intervalMs: 200 });
    const changing = Date.now();
    const { stdout } = await run(process.execPath, ['apps/cli/bin/herald.mjs', 'limits', 'set', '--platform', 'apns', '--rate', '400'], { env });
    const changedAt = Date.now();
    expect(stdout).toContain('at most 400 pushes/s');
    await waitFor('the rest delivered', async () => (await deliveredSoFar(sys)) - deliveredBefore >= 3000, { timeoutMs: 30_000, intervalMs: 250 });
    const { times } = await receiveTimes(sys, from);
    expect(times).toHaveLength(3000);
    const before = times.filter((t) => t >= (times[0] as number) + 1000 && t < changing);
    const beforeRate = before.length / ((changing - ((times[0] as number) + 1000)) / 1000);
    const after = times.filter((t) => t >= changedAt + 2000 && t < changedAt + 5000);
    console.log(JSON.stringify({ beforeRate: Math.round(beforeRate), afterRate: after.length / 3 }));
    expect(beforeRate).toBeLessThanOrEqual(110);
    expect(beforeRate).toBeGreaterThanOrEqual(90);
    expect(after.length / 3).toBeGreaterThanOrEqual(0.9 * 400);
    expect(after.length / 3).toBeLessThanOrEqual(400 + 40);
    const list = await run(process.execPath, ['apps/cli/bin/herald.mjs', 'limits', 'list', '--json'], { env });
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ platform: 'apns', app: '*', ratePerSec: 400 })]);
  });
});
