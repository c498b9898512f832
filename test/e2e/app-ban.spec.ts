import { randomUUID } from 'node:crypto';
import { parkedQueueFor, sendQueueFor, type Platform } from '@herald/contracts';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apnsToken, fcmToken, uniqueUser } from '../support/fixtures.ts';
import { API_TEST_ENV, admin, call, createAppWithOwnCredentials, mintApnsKey, mintFcmProject, teamKey } from '../support/http-api.ts';
import { metric } from '../support/metrics.ts';
import { delivered, sandboxRecords } from '../support/sandbox-client.ts';
import { startSystem, type System } from '../support/system.ts';

const THRESHOLD = 5;
const PLATFORMS: Platform[] = ['apns', 'fcm'];

describe('a broken credential bans that app, and only that app', () => {
  let sys: System;
  let key: string;
  const users = { good: [] as Array<{ user: string; tokens: string[] }>, broken: [] as Array<{ user: string; tokens: string[] }> };

  async function addUsers(app: 'good' | 'broken', n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const user = uniqueUser(app);
      const tokens = [apnsToken(), fcmToken()];
      await Promise.all(
        tokens.map((token, j) =>
          sys.client.publishRegistration({ kind: 'register', app, platform: PLATFORMS[j] as Platform, token, userId: user, eventAt: new Date().toISOString() }),
        ),
      );
      users[app].push({ user, tokens });
    }
    await waitFor(`${app} devices`, async () => {
      const found = await sys.database.db.devices.findTargets([{ key: 'k', app, userIds: users[app].map((u) => u.user), category: '-' }], new Date());
      return (found.get('k') ?? []).length === users[app].length * 2;
    });
  }

  const jobsFor = (app: 'good' | 'broken', from: number, to: number) =>
    users[app].slice(from, to).map((u) => ({ id: randomUUID(), app, userId: u.user, category: 'social', content: { title: `to ${u.user}` } }));

  async function post(jobs: object[]): Promise<void> {
    const r = await call(sys, 'POST', '/v1/jobs:batch', { key, body: { jobs } });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
  }

  const parkedCodes = async (platform: Platform) =>
    (await peekMessages(sys.vhost.name, parkedQueueFor(sendQueueFor(platform)), 1000)).map((m) => String(m.properties.headers?.['x-herald-parked-code']));

  const brokenRequests = async (platform: Platform) => {
    const tokens = new Set(users.broken.map((u) => u.tokens[PLATFORMS.indexOf(platform)]));
    return (await sandboxRecords(sys.sandbox, { platform })).filter((r) => tokens.has(r.path.split('/').pop()) || tokens.has(String((r.body['message'] as { token?: string } | undefined)?.token)));
  };

  beforeAll(async () => {
    sys = await startSystem({ env: { ...API_TEST_ENV, APP_BAN_THRESHOLD: String(THRESHOLD), APP_BAN_WINDOW_MS: '60000', APP_BAN_COOLDOWN_MS: '600000' } });
    await createAppWithOwnCredentials(sys, 'good');
    // Real sandbox credentials, wrongly paired: a key with another team id, a token of another project.
    const apns = await mintApnsKey(sys.sandbox);
    const [fcm, otherProject] = [await mintFcmProject(sys.sandbox), await mintFcmProject(sys.sandbox)];
    const created = await admin(sys, 'POST', '/admin/apps', {
      id: 'broken',
      apnsTopic: 'com.example.broken',
      apns: { auth: 'token', keyPem: apns.keyPem, keyId: apns.keyId, teamId: 'WRONGTEAM1', endpoint: 'local' },
      fcm: { auth: 'access-token', accessToken: fcm.accessToken, projectId: otherProject.projectId, endpoint: 'local' },
    });
    expect(created.status).toBe(201);
    key = await teamKey(sys, 'team', ['good', 'broken']);
    await addUsers('good', 12);
    await addUsers('broken', 12);
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it('parks the broken app after the threshold while the good app keeps its pace', async () => {
    const started = Date.now();
    // Wave 1: more than THRESHOLD failures per platform start the ban.
    await Promise.all([post(jobsFor('broken', 0, 6)), post(jobsFor('good', 0, 6))]);
    for (const platform of PLATFORMS) {
      await waitFor(`${platform} ban`, async () => (await metric(sys.service(`${platform}-pusher`), 'herald_app_banned', { app: 'broken' })) === 1);
    }
    // Wave 2: the broken app's pushes are parked without reaching the provider.
    const requestsAtBan = await Promise.all(PLATFORMS.map(async (p) => (await brokenRequests(p)).length));
    const wave2 = jobsFor('broken', 6, 12);
    await Promise.all([post(wave2), post(jobsFor('good', 6, 12))]);
    for (const platform of PLATFORMS) {
      await waitFor(`${platform} app-banned parks`, async () => (await parkedCodes(platform)).filter((c) => c === 'app-banned').length === 6);
      const codes = await parkedCodes(platform);
      const rejected = codes.filter((c) => c === 'provider-rejected').length;
      expect(rejected).toBeGreaterThanOrEqual(THRESHOLD);
      // Rejected for good by the provider: counted as failed (the ban's parks as parked).
      expect(await metric(sys.service(`${platform}-pusher`), 'herald_pushes_total', { app: 'broken', outcome: 'failed' })).toBe(rejected);
      expect(await metric(sys.service(`${platform}-pusher`), 'herald_pushes_total', { app: 'broken', outcome: 'parked' })).toBe(6);
    }
    expect(await Promise.all(PLATFORMS.map(async (p) => (await brokenRequests(p)).length))).toEqual(requestsAtBan);

    // The good app: every push delivered, promptly, through the same pushers.
    const goodTokens = users.good.flatMap((u) => u.tokens);
    const records = await waitFor('good pushes delivered', async () => {
      const got = (await Promise.all(goodTokens.map((token) => delivered(sys.sandbox, { token })))).flat();
      return got.length === goodTokens.length && got;
    });
    const slowest = Math.max(...records.map((r) => Date.parse(r.receivedAt))) - started;
    expect(slowest).toBeLessThan(5000);
    expect((await parkedCodes('apns')).length + (await parkedCodes('fcm')).length).toBe(2 * 12);

    // An alarm in the log, and the job status counts the parked pushes.
    for (const platform of PLATFORMS) {
      expect(sys.service(`${platform}-pusher`).logs.some((l) => l['alarm'] === 'app-banned' && l['app'] === 'broken')).toBe(true);
      expect(await metric(sys.service(`${platform}-pusher`), 'herald_app_banned', { app: 'good' })).toBe(0);
    }
    const banned = wave2[0] as { id: string };
    await waitFor('status of a banned job', async () => (await call(sys, 'GET', `/v1/jobs/${banned.id}`, { key })).body['parked'] === 2);
  });
});
