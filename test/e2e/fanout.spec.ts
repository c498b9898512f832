import type { JobStatus } from '@herald/contracts';
import { createAudienceStore, toJobStatus } from '@herald/db';
import { waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apnsToken, job, uniqueUser } from '../support/fixtures.ts';
import { API_TEST_ENV, call, teamKey } from '../support/http-api.ts';
import { delivered, injectFault } from '../support/sandbox-client.ts';
import { DEMO_APP, startExtraService, startSystem, type System } from '../support/system.ts';

/**
 * Audience fan-outs end to end (issue 20, ADR 0013): a job to a topic, followers, a segment or the
 * whole app is expanded in checkpointed chunks by the demuxers and delivered exactly once per
 * device; it can be cancelled mid-way, and survives a SIGKILL of the demuxer expanding it.
 */
/** Small chunks: a fan-out of a few thousand devices takes dozens of sequential chunk reads, so a test sees it mid-way. */
const CHUNK = 100;

interface Member {
  userId: string;
  token: string;
  appVersion: string;
  lastSeenAt: Date;
}

let sys: System;
let key: string;

const members = (n: number, label: string, appVersion = '5.0.0'): Member[] =>
  Array.from({ length: n }, (_, i) => ({ userId: uniqueUser(`${label}${i}`), token: apnsToken(), appVersion, lastSeenAt: new Date(Date.now() - i * 60_000) }));

/** Devices written straight to PostgreSQL (thousands in one statement; the registrar path is covered elsewhere). */
async function seedDevices(list: readonly Member[]): Promise<void> {
  const now = new Date();
  const rows = list.map((m) => ({ app: DEMO_APP.id, platform: 'apns' as const, token: m.token, user_id: m.userId, registered_at: now, last_event_at: now, app_version: m.appVersion, last_seen_at: m.lastSeenAt }));
  for (let i = 0; i < rows.length; i += 1000) await sys.database.db.kysely.insertInto('devices').values(rows.slice(i, i + 1000)).execute();
}

/** A topic and its user members, through the audience store (as the topic API does). */
async function seedTopic(topic: string, list: readonly Member[]): Promise<void> {
  await seedDevices(list);
  const store = createAudienceStore(sys.database.db.kysely);
  await store.createTopic(DEMO_APP.id, topic);
  const eventAt = new Date().toISOString();
  await store.applyTopicMemberships(list.map((m) => ({ app: DEMO_APP.id, topic, member: { userId: m.userId }, subscribed: true, eventAt })));
}

/** Sandbox deliveries per token, for these members only. */
async function deliveries(list: readonly Member[]): Promise<Map<string, number>> {
  const tokens = new Set(list.map((m) => m.token));
  const counts = new Map<string, number>();
  for (const r of await delivered(sys.sandbox, { platform: 'apns' })) {
    const token = r.path.slice('/3/device/'.length);
    if (tokens.has(token)) counts.set(token, (counts.get(token) ?? 0) + 1);
  }
  return counts;
}

async function status(jobId: string): Promise<JobStatus> {
  const record = await sys.database.db.jobs.status(jobId);
  if (record === undefined) throw new Error(`no status for ${jobId}`);
  return toJobStatus(record);
}

const sum = (s: JobStatus): number =>
  s.delivered + s.invalid + s.failed + s.parked + s.skipped.optedOut + s.skipped.muted + s.skipped.noDevice + s.skipped.expired + s.skipped.cancelled + (s.inFlight ?? 0);

async function post(body: object): Promise<{ status: number; body: Record<string, unknown> }> {
  return call(sys, 'POST', '/v1/jobs', { key, body: job(body) });
}

const exactlyOnce = (counts: Map<string, number>): number[] => [...counts.values()].filter((n) => n !== 1);

beforeAll(async () => {
  sys = await startSystem({ env: { ...API_TEST_ENV, FANOUT_CHUNK_SIZE: String(CHUNK), LEDGER_LEASE_MS: '3000' } });
  key = await teamKey(sys, 'fanout', [DEMO_APP.id]);
  // A second demuxer: chunks of one fan-out are shared.
  await startExtraService(sys, 'demuxer');
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

describe('audience fan-outs', () => {
  it('a topic of 2,000 devices: every device exactly once, over several chunks, and the status adds up', async () => {
    const list = members(2000, 'topic');
    await seedTopic('breaking-news', list);
    const posted = await post({ audience: { topic: 'breaking-news' } });
    expect(posted.status).toBe(202);
    const id = String(posted.body['id']);
    await waitFor('every device delivered', async () => (await deliveries(list)).size === list.length, { timeoutMs: 40_000 });
    expect(exactlyOnce(await deliveries(list))).toEqual([]);
    const s = await waitFor('status done', async () => {
      const st = await status(id);
      return st.state === 'done' && st;
    });
    expect(s).toMatchObject({ targeted: 2000, delivered: 2000, inFlight: 0 });
    // A topic's size is its subscriber count (users), an estimate of its devices; here one device each.
    expect(s.audience).toMatchObject({ size: 2000, expanded: 2000 });
    expect(s.audience?.chunks).toBeGreaterThanOrEqual(2000 / CHUNK);
    expect(sum(s)).toBe(s.targeted);
  });

  it('followers of a user, and only the most recently active N of them', async () => {
    const followee = uniqueUser('artist');
    const list = members(30, 'fan');
    await seedDevices(list);
    // Through the audience store (as the follow events' door does), so the capped recently-active index is kept.
    const eventAt = new Date().toISOString();
    await createAudienceStore(sys.database.db.kysely).applyFollowEvents(list.map((m) => ({ app: DEMO_APP.id, follower: m.userId, followee, following: true, eventAt })));
    expect((await post({ audience: { followersOf: followee } })).status).toBe(202);
    await waitFor('every follower delivered', async () => (await deliveries(list)).size === list.length);
    const recent = await post({ audience: { followersOf: followee, mostRecent: 5 }, content: { title: 'recent' } });
    expect(recent.status).toBe(202);
    const id = String(recent.body['id']);
    const s = await waitFor('most recent done', async () => {
      const st = await status(id);
      return st.state === 'done' && st;
    });
    expect(s.delivered).toBe(5);
    // Members were made with last_seen_at one minute apart, the first the most recent.
    const counts = await deliveries(list);
    expect(list.slice(0, 5).every((m) => counts.get(m.token) === 2)).toBe(true);
    expect(list.slice(5).every((m) => counts.get(m.token) === 1)).toBe(true);
  });

  it("followers whose devices a VoIP call cannot reach count as without a device: the status adds up", async () => {
    const followee = uniqueUser('caller');
    const phones = members(3, 'phone-only');
    const withVoip = members(1, 'voip');
    await seedDevices([...phones, ...withVoip]);
    await sys.database.db.kysely.updateTable('devices').set({ token_kind: 'voip' }).where('token', '=', withVoip[0]?.token ?? '').execute();
    const eventAt = new Date().toISOString();
    await createAudienceStore(sys.database.db.kysely).applyFollowEvents([...phones, ...withVoip].map((m) => ({ app: DEMO_APP.id, follower: m.userId, followee, following: true, eventAt })));
    const posted = await post({ audience: { followersOf: followee }, content: { pushType: 'voip', data: { caller: 'Ann' } } });
    expect(posted.status).toBe(202);
    const s = await waitFor('the call done', async () => {
      const st = await status(String(posted.body['id']));
      return st.state === 'done' && st;
    });
    expect(s).toMatchObject({ targeted: 4, delivered: 1, inFlight: 0, skipped: { noDevice: 3 } });
    expect(sum(s)).toBe(s.targeted);
    expect([...(await deliveries([...phones, ...withVoip])).keys()]).toEqual([withVoip[0]?.token]);
  });

  it('a segment: only matching devices receive; a broadcast reaches every device of the app', async () => {
    const old = members(20, 'old', '4.2.0');
    const fresh = members(20, 'new', '5.3.1');
    await seedTopic('release-notes', [...old, ...fresh]);
    const segmented = await post({ audience: { topic: 'release-notes', segment: 'appVersion >= "5.0"' } });
    expect(segmented.status).toBe(202);
    await waitFor('segment delivered', async () => (await deliveries(fresh)).size === fresh.length);
    const s = await waitFor('segment done', async () => {
      const st = await status(String(segmented.body['id']));
      return st.state === 'done' && st;
    });
    expect(s.delivered).toBe(20);
    expect((await deliveries(old)).size).toBe(0);
    const counted = await sys.database.db.kysely.selectFrom('devices').select((eb) => eb.fn.countAll<string>().as('n')).where('app', '=', DEMO_APP.id).executeTakeFirst();
    const all = Number(counted?.n);
    const broadcast = await post({ audience: { broadcast: true, segment: 'appVersion < "5.0"' } });
    expect(broadcast.status).toBe(202);
    const b = await waitFor('broadcast done', async () => {
      const st = await status(String(broadcast.body['id']));
      return st.state === 'done' && st;
    });
    expect(b.delivered).toBe(20);
    expect(b.audience?.size).toBe(20);
    expect(all).toBeGreaterThan(20);
  });

  it('bad input: an unknown topic is a 404 naming it (parked with a reason over AMQP); a segment syntax error is a 400 naming the column', async () => {
    const unknown = await post({ audience: { topic: 'no-such-topic' } });
    expect(unknown.status).toBe(404);
    expect(JSON.stringify(unknown.body)).toContain('no-such-topic');
    const bad = await post({ audience: { broadcast: true, segment: 'platform = "apns" and (' } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toMatch(/audience\.segment.*column \d+/);
    const viaAmqp = job({ audience: { topic: 'no-such-topic' } });
    await sys.client.publishPushJob(viaAmqp);
    const parked = await waitFor('parked', async () => {
      const st = await sys.database.db.jobs.status(viaAmqp.id);
      return st?.job.demuxOutcome?.startsWith('parked') === true && toJobStatus(st);
    });
    expect(parked.jobParked).toEqual({ code: 'unknown-audience', reason: expect.stringContaining('no-such-topic') as unknown });
  });

  it('cancel mid fan-out: deliveries stop within a bound, nothing new is sent, the status says cancelled and adds up', async () => {
    const list = members(3000, 'cancel');
    await seedTopic('cancel-me', list);
    // A slow provider: 3,000 pushes take many seconds to send, so the cancel surely lands mid-way.
    await injectFault(sys.sandbox, { platform: 'apns', fraction: 1, delayMs: 250 });
    try {
      const posted = await post({ audience: { topic: 'cancel-me' } });
      const id = String(posted.body['id']);
      await waitFor('some deliveries', async () => (await deliveries(list)).size >= 100);
      const cancelled = await call(sys, 'DELETE', `/v1/jobs/${id}`, { key });
      const cancelledAt = Date.now();
      expect(cancelled.status).toBe(200);
      // Poll until deliveries stop changing (quiet for 2 s), noting when they last changed.
      let later = (await deliveries(list)).size;
      let changedAt = cancelledAt;
      while (Date.now() - changedAt < 2000) {
        await new Promise((r) => setTimeout(r, 100));
        const n = (await deliveries(list)).size;
        if (n !== later) [later, changedAt] = [n, Date.now()];
      }
      // Pushes already at the provider finish; nothing new starts. 3 s is generous for a loaded machine.
      expect(changedAt - cancelledAt).toBeLessThanOrEqual(3000);
      expect(later).toBeLessThan(list.length);
      const s = await waitFor('nothing in flight', async () => {
        const st = await status(id);
        return st.inFlight === 0 && st;
      }, { timeoutMs: 20_000 });
      expect(s.state).toBe('cancelled');
      expect(s.delivered).toBe(later);
      expect(sum(s)).toBe(s.targeted);
      expect(exactlyOnce(await deliveries(list))).toEqual([]);
    } finally {
      await fetch(`${sys.sandbox.settings.control.url}/faults`, { method: 'DELETE' });
    }
  });

  it('resume after a SIGKILL of the expanding demuxer: 0 lost, 0 duplicates', async () => {
    const list = members(3000, 'kill');
    await seedTopic('survive', list);
    await injectFault(sys.sandbox, { platform: 'apns', fraction: 1, delayMs: 10 });
    try {
      const posted = await post({ audience: { topic: 'survive' } });
      const id = String(posted.body['id']);
      await waitFor('expansion under way', async () => {
        const st = await status(id);
        return st.state === 'expanding' && (st.audience?.chunksDone ?? 0) >= 1;
      }, { intervalMs: 10 });
      const demuxer = sys.service('demuxer');
      expect((await demuxer.stop('SIGKILL')).signal).toBe('SIGKILL');
      // Killed mid-way: the audience was not yet fully read or sent.
      expect((await deliveries(list)).size).toBeLessThan(list.length);
      await demuxer.start();
      await waitFor('every device delivered', async () => (await deliveries(list)).size === list.length, { timeoutMs: 60_000 });
      await new Promise((r) => setTimeout(r, 1000));
      expect(exactlyOnce(await deliveries(list))).toEqual([]);
      const s = await waitFor('done', async () => {
        const st = await status(id);
        return st.state === 'done' && st;
      });
      expect(s).toMatchObject({ delivered: 3000, inFlight: 0 });
      expect(sum(s)).toBe(s.targeted);
    } finally {
      await fetch(`${sys.sandbox.settings.control.url}/faults`, { method: 'DELETE' });
    }
  });
});

