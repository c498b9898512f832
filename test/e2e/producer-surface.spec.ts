import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createHeraldHttpClient, HeraldApiError, ValidationError } from '@herald/client';
import { DevicePush, Queues, parkedQueueFor } from '@herald/contracts';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { herald as runHerald } from '../support/cli.ts';
import { apnsToken, fcmToken, registerDevices, uniqueUser } from '../support/fixtures.ts';
import { API_TEST_ENV, apiUrl, call, createAppWithOwnCredentials, teamKey } from '../support/http-api.ts';
import { delivered, injectFault, sandboxRecords } from '../support/sandbox-client.ts';
import { DEMO_APP, startSystem, type System } from '../support/system.ts';

type Issues = Array<{ path: string; message: string }>;
type Answer = { status: number; body: Record<string, unknown> };

/** The fields a 400 named. */
const named = (r: Answer): string[] => ((r.body['error'] as { issues?: Issues } | undefined)?.issues ?? []).map((i) => i.path);

describe('producer surface: opt-outs, mutes and devices per app over HTTP, the CLI, validation at the door', () => {
  let sys: System;
  let key: string;
  let otherKey: string;
  let anyAppKey: string;

  /** Run `herald ...` against this system; resolves with its exit code and output (never rejects). */
  const herald = (...args: string[]) => runHerald({ ...sys.env, LOG_LEVEL: 'warn' }, ...args);

  const register = async (app: string, userId: string, extra: Record<string, unknown> = {}, platform: 'apns' | 'fcm' = 'apns') => {
    const token = platform === 'apns' ? apnsToken() : fcmToken();
    const r = await call(sys, 'POST', '/v1/devices', { key, body: { app, platform, token, userId, ...extra } });
    expect(r.status).toBe(202);
    await waitFor(`device ${token.slice(-6)} stored`, async () =>
      (await sys.database.db.kysely.selectFrom('devices').select('id').where('token', '=', token).executeTakeFirst()) !== undefined,
    );
    return token;
  };
  const postJob = async (app: string, userId: string, extra: Record<string, unknown> = {}) => {
    const id = randomUUID();
    const r = await call(sys, 'POST', '/v1/jobs', { key, body: { id, app, userId, category: 'news', content: { title: 'hi', body: app }, ...extra } });
    expect(r.status).toBe(202);
    return id;
  };
  const demuxed = (jobId: string) =>
    waitFor(`job ${jobId} demuxed`, async () => (await call(sys, 'GET', `/v1/jobs/${jobId}`, { key })).body['demuxOutcome'] != null);

  beforeAll(async () => {
    sys = await startSystem({ env: API_TEST_ENV });
    for (const app of ['alpha', 'beta']) await createAppWithOwnCredentials(sys, app);
    key = await teamKey(sys, 'team-a', ['alpha', 'beta']);
    otherKey = await teamKey(sys, 'team-b', [DEMO_APP.id]);
    // Allowed every app, so `ghost`, which does not exist (a key is issued only for apps that do).
    anyAppKey = await teamKey(sys, 'team-any', ['*']);
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it('opt-outs: add (idempotent), list, remove; bad input names the field; another team gets 403', async () => {
    const user = uniqueUser();
    const body = { app: 'alpha', userId: user, category: 'marketing' };
    const first = await call(sys, 'POST', '/v1/opt-outs', { key, body });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ app: 'alpha', userId: user, category: 'marketing', createdAt: expect.any(String) as unknown });
    expect((await call(sys, 'POST', '/v1/opt-outs', { key, body })).status).toBe(200);
    const listed = await call(sys, 'GET', `/v1/opt-outs?app=alpha&userId=${encodeURIComponent(user)}`, { key });
    expect(listed).toMatchObject({ status: 200, body: { optOuts: [{ app: 'alpha', userId: user, category: 'marketing' }], truncated: false } });
    // The other app of the same team has none.
    expect((await call(sys, 'GET', `/v1/opt-outs?app=beta&userId=${user}`, { key })).body).toEqual({ optOuts: [], truncated: false });

    for (const [bad, field] of [
      [{ ...body, category: '' }, 'category'],
      [{ app: 'alpha', category: 'x' }, 'userId'],
      [{ ...body, app: 'Alpha!' }, 'app'],
    ] as const) {
      const r = await call(sys, 'POST', '/v1/opt-outs', { key, body: bad });
      expect(r.status).toBe(400);
      expect(named(r)).toEqual([field]);
    }
    const unknownField = await call(sys, 'POST', '/v1/opt-outs', { key, body: { ...body, everyApp: true } });
    expect(unknownField.status).toBe(400);
    expect(JSON.stringify(unknownField.body)).toContain('everyApp');
    expect(named(await call(sys, 'GET', '/v1/opt-outs?app=alpha', { key }))).toEqual(['userId']);
    expect(named(await call(sys, 'DELETE', '/v1/opt-outs', { key, body: { app: 'alpha', userId: user } }))).toEqual(['category']);
    expect((await call(sys, 'POST', '/v1/opt-outs', { key: otherKey, body })).status).toBe(403);
    expect((await call(sys, 'GET', `/v1/opt-outs?app=alpha&userId=${user}`, { key: otherKey })).status).toBe(403);
    expect((await call(sys, 'DELETE', '/v1/opt-outs', { key: otherKey, body })).status).toBe(403);
    expect((await call(sys, 'POST', '/v1/opt-outs', { key: anyAppKey, body: { ...body, app: 'ghost' } })).body).toMatchObject({ error: { code: 'unknown-app' } });
    expect((await call(sys, 'POST', '/v1/opt-outs', { body })).status).toBe(401);

    expect(await call(sys, 'DELETE', '/v1/opt-outs', { key, body })).toMatchObject({ status: 200, body: { removed: true } });
    expect(await call(sys, 'DELETE', '/v1/opt-outs', { key, body })).toMatchObject({ status: 200, body: { removed: false } });
    expect((await call(sys, 'GET', `/v1/opt-outs?app=alpha&userId=${user}`, { key })).body).toEqual({ optOuts: [], truncated: false });
  });

  it('mutes: add with or without until, replace, list, remove; a past or malformed until names until', async () => {
    const user = uniqueUser();
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const body = { app: 'beta', userId: user, objectId: 'thread:7' };
    expect(await call(sys, 'POST', '/v1/mutes', { key, body })).toMatchObject({ status: 201, body: { ...body, until: null } });
    expect(await call(sys, 'POST', '/v1/mutes', { key, body: { ...body, until } })).toMatchObject({ status: 200, body: { ...body, until } });
    expect((await call(sys, 'GET', `/v1/mutes?app=beta&userId=${user}`, { key })).body).toMatchObject({ mutes: [{ ...body, until }], truncated: false });
    for (const [bad, field] of [
      [{ ...body, until: new Date(Date.now() - 60_000).toISOString() }, 'until'],
      [{ ...body, until: 'tomorrow' }, 'until'],
      [{ ...body, objectId: 'x'.repeat(201) }, 'objectId'],
      [{ app: 'beta', userId: user }, 'objectId'],
    ] as const) {
      const r = await call(sys, 'POST', '/v1/mutes', { key, body: bad });
      expect(r.status).toBe(400);
      expect(named(r)).toEqual([field]);
    }
    expect(named(await call(sys, 'GET', `/v1/mutes?userId=${user}`, { key }))).toEqual(['app']);
    expect((await call(sys, 'POST', '/v1/mutes', { key: otherKey, body })).status).toBe(403);
    expect((await call(sys, 'GET', `/v1/mutes?app=beta&userId=${user}`, { key: otherKey })).status).toBe(403);
    expect(await call(sys, 'DELETE', '/v1/mutes', { key, body })).toMatchObject({ status: 200, body: { removed: true } });
    expect((await call(sys, 'GET', `/v1/mutes?app=beta&userId=${user}`, { key })).body).toEqual({ mutes: [], truncated: false });
  });

  it("lists a user's devices of an app, valid and invalidated, with tokens masked", async () => {
    const user = uniqueUser();
    const kept = await register('alpha', user, { timezone: 'Europe/Berlin', locale: 'de-DE' });
    const gone = await register('alpha', user, {}, 'fcm');
    expect((await call(sys, 'DELETE', '/v1/devices', { key, body: { app: 'alpha', platform: 'fcm', token: gone } })).status).toBe(202);
    const list = await waitFor('unregistered device listed as invalid', async () => {
      const r = await call(sys, 'GET', `/v1/devices?app=alpha&userId=${user}`, { key });
      const devices = r.body['devices'] as Array<Record<string, unknown>>;
      return devices.some((d) => d['invalidSince'] !== null) && devices;
    });
    expect(list).toHaveLength(2);
    const apns = list.find((d) => d['platform'] === 'apns');
    const fcm = list.find((d) => d['platform'] === 'fcm');
    expect(apns).toMatchObject({ app: 'alpha', userId: user, token: `…${kept.slice(-6)}`, tokenKind: 'device', timezone: 'Europe/Berlin', locale: 'de-DE', invalidSince: null, invalidReason: null });
    expect(Date.parse(String(apns?.['registeredAt']))).not.toBeNaN();
    expect(fcm).toMatchObject({ token: `…${gone.slice(-6)}`, invalidReason: 'unregistered', invalidSince: expect.any(String) as unknown });
    expect(JSON.stringify(list)).not.toContain(kept);
    expect(JSON.stringify(list)).not.toContain(gone);
    expect((await call(sys, 'GET', `/v1/devices?app=beta&userId=${user}`, { key })).body).toEqual({ devices: [], truncated: false });
    expect(named(await call(sys, 'GET', `/v1/devices?app=alpha&userId=${user}&extra=1`, { key }))).toEqual(['(root)']);
    expect(named(await call(sys, 'GET', `/v1/devices?userId=${user}`, { key }))).toEqual(['app']);
    expect((await call(sys, 'GET', `/v1/devices?app=alpha&userId=${user}`, { key: otherKey })).status).toBe(403);
  });

  it('a per-app opt-out or mute silences only that app: the same job for the other app still delivers', async () => {
    const user = uniqueUser();
    const [alphaToken, betaToken] = [await register('alpha', user), await register('beta', user)];
    expect((await call(sys, 'POST', '/v1/opt-outs', { key, body: { app: 'alpha', userId: user, category: 'news' } })).status).toBe(201);
    expect((await call(sys, 'POST', '/v1/mutes', { key, body: { app: 'beta', userId: user, objectId: 'thread:1' } })).status).toBe(201);
    const silenced = [await postJob('alpha', user), await postJob('beta', user, { objectId: 'thread:1' })];
    await postJob('beta', user);
    await postJob('alpha', user, { objectId: 'thread:1', category: 'social' });
    await waitFor('beta delivered once', async () => (await delivered(sys.sandbox, { token: betaToken })).length === 1);
    await waitFor('alpha delivered once', async () => (await delivered(sys.sandbox, { token: alphaToken })).length === 1);
    for (const id of silenced) await demuxed(id);
    await new Promise((r) => setTimeout(r, 500));
    expect(await sandboxRecords(sys.sandbox, { token: alphaToken })).toHaveLength(1);
    expect(await sandboxRecords(sys.sandbox, { token: betaToken })).toHaveLength(1);
  });

  it('a bad timezone or locale is refused at every door, naming the field, and nothing is published', async () => {
    const user = uniqueUser();
    const token = apnsToken();
    const base = { app: 'alpha', platform: 'apns', token, userId: user };
    const zone = await call(sys, 'POST', '/v1/devices', { key, body: { ...base, timezone: 'Mars/Base' } });
    expect(zone.status).toBe(400);
    expect(named(zone)).toEqual(['timezone']);
    expect((zone.body['error'] as { message: string }).message).toMatch(/timezone: "Mars\/Base" is not an IANA time zone name/);
    expect(named(await call(sys, 'POST', '/v1/devices', { key, body: { ...base, locale: 'english language' } }))).toEqual(['locale']);
    // The client libraries throw before anything is sent.
    await expect(sys.client.publishRegistration({ ...base, platform: 'apns', kind: 'register', timezone: 'Mars/Base', eventAt: new Date().toISOString() })).rejects.toThrow(ValidationError);
    const http = createHeraldHttpClient({ url: apiUrl(sys), apiKey: key });
    await expect(http.registerDevice({ ...base, platform: 'apns', timezone: 'Mars/Base' })).rejects.toThrow(/timezone: "Mars\/Base"/);
    // The CLI: one line, non-zero.
    const cli = await herald('register', '--app', 'alpha', '--platform', 'apns', '--token', token, '--user', user, '--timezone', 'Mars/Base');
    expect(cli.code).not.toBe(0);
    expect(cli.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^herald: invalid registration: timezone: "Mars\/Base" is not an IANA time zone name/)]);
    // A good registration published after them is stored; none of the refused ones reached the registrar.
    await register('alpha', user, { timezone: 'Asia/Kolkata' });
    expect(await sys.database.db.kysely.selectFrom('devices').select('id').where('token', '=', token).executeTakeFirst()).toBeUndefined();
    const parked = await peekMessages(sys.vhost.name, parkedQueueFor(Queues.registrations), 1000);
    expect(parked.filter((m) => JSON.stringify(m.payload).includes(token))).toEqual([]);
  });

  it('the HTTP client library speaks the new routes and throws the API refusal', async () => {
    const user = uniqueUser();
    const http = createHeraldHttpClient({ url: apiUrl(sys), apiKey: key });
    expect(await http.optOut({ app: 'alpha', userId: user, category: 'c1' })).toMatchObject({ app: 'alpha', category: 'c1' });
    expect((await http.listOptOuts({ app: 'alpha', userId: user })).optOuts.map((o) => o.category)).toEqual(['c1']);
    expect(await http.optIn({ app: 'alpha', userId: user, category: 'c1' })).toBe(true);
    expect(await http.mute({ app: 'alpha', userId: user, objectId: 'o1' })).toMatchObject({ objectId: 'o1', until: null });
    expect((await http.listMutes({ app: 'alpha', userId: user })).mutes).toHaveLength(1);
    expect(await http.unmute({ app: 'alpha', userId: user, objectId: 'o1' })).toBe(true);
    expect((await http.listDevices({ app: 'alpha', userId: user })).devices).toEqual([]);
    expect(await http.mute({ app: 'alpha', userId: user, objectId: 'o2' })).toMatchObject({ objectId: 'o2' });
    expect((await http.eraseUser({ app: 'alpha', userId: user })).removed).toMatchObject({ devices: 0, mutes: 1 });
    expect((await http.listMutes({ app: 'alpha', userId: user })).mutes).toEqual([]);
    await expect(http.optOut({ app: 'alpha', userId: user, category: '' })).rejects.toThrow(ValidationError);
    const refused = await http.optOut({ app: DEMO_APP.id, userId: user, category: 'c1' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HeraldApiError);
    expect(refused).toMatchObject({ status: 403, code: 'app-not-allowed' });
  });

  it("erases a user of an app over HTTP and the CLI: devices unregistered and stripped, preferences gone, nothing more sent; refusals name the field", async () => {
    const user = uniqueUser();
    const token = await register('alpha', user, { timezone: 'Europe/Berlin', locale: 'de-DE' });
    const other = await register('beta', user);
    expect((await call(sys, 'POST', '/v1/opt-outs', { key, body: { app: 'alpha', userId: user, category: 'promo' } })).status).toBe(201);
    expect((await call(sys, 'POST', '/v1/users:erase', { key: otherKey, body: { app: 'alpha', userId: user } })).status).toBe(403);
    expect(named(await call(sys, 'POST', '/v1/users:erase', { key, body: { app: 'alpha' } }))).toEqual(['userId']);
    const erased = await call(sys, 'POST', '/v1/users:erase', { key, body: { app: 'alpha', userId: user } });
    expect(erased.status).toBe(200);
    expect(erased.body).toMatchObject({
      app: 'alpha', userId: user, erasedAt: expect.any(String) as unknown,
      removed: { devices: 1, topicMemberships: 0, follows: 0, optOuts: 1, mutes: 0, storedPushes: 0 }, kept: { everyAppOptOuts: 0, everyAppMutes: 0 }, notices: [],
    });
    // The team sees no device of the user in alpha; the device row keeps no user or attribute; beta's device is the user's still.
    expect((await call(sys, 'GET', `/v1/devices?app=alpha&userId=${user}`, { key })).body).toEqual({ devices: [], truncated: false });
    const row = await sys.database.db.kysely.selectFrom('devices').select(['user_id', 'timezone', 'locale', 'invalidation_reason']).where('token', '=', token).executeTakeFirstOrThrow();
    expect(row).toEqual({ user_id: null, timezone: null, locale: null, invalidation_reason: 'unregistered' });
    expect((await call(sys, 'GET', `/v1/devices?app=beta&userId=${user}`, { key })).body).toMatchObject({ devices: [{ token: `…${other.slice(-6)}` }] });
    // A job for the user finds no device in alpha.
    const job = await postJob('alpha', user);
    await demuxed(job);
    expect((await call(sys, 'GET', `/v1/jobs/${job}`, { key })).body).toMatchObject({ demuxOutcome: 'no-devices', delivered: 0, skipped: { noDevice: 1 } });
    // The CLI erases the beta one, and says so; its audit entry names a digest of the user, not the user.
    const cli = await herald('erase-user', '--app', 'beta', '--user', user, '--json');
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject([{ app: 'beta', devices: 1, storedPushes: 0 }]);
    const audit = await sys.database.db.kysely.selectFrom('audit_log').select(['target', 'request']).where('action', '=', 'user.erase').execute();
    expect(audit.length).toBeGreaterThan(0);
    expect(JSON.stringify(audit)).not.toContain(user);
    expect((await herald('erase-user', '--user', user)).stderr).toMatch(/^herald: give exactly one of --app/);
  });

  it('CLI: opt-out, mute and devices per app, each refusing bad input in one line', async () => {
    const user = uniqueUser();
    const token = await register('beta', user);
    const optOut = await herald('opt-out', '--app', 'beta', '--user', user, '--category', 'promo');
    expect(optOut).toMatchObject({ code: 0, stdout: `${user} opted out of promo (app beta)\n` });
    expect((await call(sys, 'GET', `/v1/opt-outs?app=beta&userId=${user}`, { key })).body).toMatchObject({ optOuts: [{ app: 'beta', category: 'promo' }] });
    expect((await herald('mute', '--app', 'beta', '--user', user, '--object', 'thread:3')).code).toBe(0);
    expect((await call(sys, 'GET', `/v1/mutes?app=beta&userId=${user}`, { key })).body).toMatchObject({ mutes: [{ app: 'beta', objectId: 'thread:3', until: null }] });
    const devices = await herald('devices', '--app', 'beta', '--user', user, '--json');
    expect(devices.code).toBe(0);
    expect(JSON.parse(devices.stdout)).toMatchObject([{ platform: 'apns', token: `…${token.slice(-6)}`, kind: 'device' }]);
    for (const args of [
      ['opt-out', '--user', user, '--category', 'promo'],
      ['opt-out', '--app', 'nosuch', '--user', user, '--category', 'promo'],
      ['opt-out', '--app', 'beta', '--user', user, '--category', 'x'.repeat(101)],
      ['mute', '--app', 'beta', '--user', user, '--object', 'o', '--until', '2001-01-01T00:00:00Z'],
      ['mute', '--app', 'beta', '--user', user, '--object', 'o', '--until', 'soon'],
      ['devices', '--app', 'nosuch', '--user', user],
    ]) {
      const r = await herald(...args);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toEqual([expect.stringMatching(/^herald: /)]);
    }
    expect((await herald('opt-out', '--app', 'nosuch', '--user', user, '--category', 'p')).stderr).toMatch(/unknown app "nosuch"/);
    expect((await herald('opt-out', '--app', 'beta', '--user', user, '--category', 'promo', '--undo')).stdout).toBe(`${user} opted back into promo (app beta)\n`);
  });

  it('CLI send --trace follows the job where the command runs: each device push\'s outcome, then a summary', async () => {
    const userId = uniqueUser('trace');
    const phone = { userId, platform: 'apns' as const, token: apnsToken() };
    const gone = { userId, platform: 'fcm' as const, token: fcmToken() };
    await registerDevices(sys, [phone, gone]);
    await injectFault(sys.sandbox, { platform: 'fcm', token: gone.token, error: 'UNREGISTERED' });
    const r = await herald('send', '--app', DEMO_APP.id, '--user', userId, '--title', 'hi', '--trace', '--trace-timeout', '20');
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toContainEqual(expect.stringMatching(/^demuxer: fanned-out$/));
    expect(lines).toContainEqual(expect.stringMatching(/^push \S+ {2}apns {2}\S+ {2}delivered/));
    expect(lines).toContainEqual(expect.stringMatching(/^push \S+ {2}fcm {2}\S+ {2}invalid {2}.*UNREGISTERED/));
    expect(lines.at(-1)).toMatch(/^job \S+: targeted 2, delivered 1, invalid 1, failed 0, parked 0, skipped 0, scheduled 0, in flight 0$/);
  });

  it('CLI send: an unknown app is one line and a non-zero exit, before anything is published', async () => {
    const r = await herald('send', '--app', 'nosuch', '--user', 'u1', '--title', 'hi');
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^herald: unknown app "nosuch"[^\n]*\n$/);
    const badge = await herald('send', '--app', DEMO_APP.id, '--user', 'u1', '--title', 'hi', '--badge', 'three');
    expect(badge).toMatchObject({ stdout: '', stderr: 'herald: --badge must be a whole number, got "three"\n' });
    expect(badge.code).not.toBe(0);
    const both = await herald('send', '--app', DEMO_APP.id, '--user', 'u1', '--title', 'hi', '--deliver-at', new Date().toISOString(), '--local-time', '09:00');
    expect(both.stderr).toMatch(/^herald: give --deliver-at .* not both\n$/);
    const priority = await herald('send', '--app', DEMO_APP.id, '--user', 'u1', '--title', 'hi', '--priority', 'urgent');
    expect(priority.stderr).toMatch(/^herald: invalid push job: priority: [^\n]*\n$/);
  });

  it('CLI send --local-time with --badge, --sound, --priority, --collapse-key and --expires-at stores a job with those fields', async () => {
    const user = uniqueUser();
    const token = await register('alpha', user, { timezone: 'Asia/Kolkata' });
    // Three hours from now, to the minute, as a wall-clock time in Kolkata (UTC+05:30).
    const target = new Date(Math.floor((Date.now() + 3 * 3_600_000) / 60_000) * 60_000);
    const kolkata = new Date(target.getTime() + 330 * 60_000).toISOString().slice(11, 16);
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const id = randomUUID();
    const sent = await herald('send', '--app', 'alpha', '--user', user, '--title', 'later', '--id', id, '--local-time', kolkata, '--jitter', 'PT10M',
      '--badge', '3', '--sound', 'x', '--priority', 'normal', '--collapse-key', 'digest', '--expires-at', expiresAt);
    expect(sent.code, sent.stderr).toBe(0);
    const row = await waitFor('scheduled row', async () =>
      sys.database.db.kysely.selectFrom('scheduled_pushes').selectAll().where('job_id', '=', id).executeTakeFirst(),
    );
    expect(row.due_at.getTime()).toBeGreaterThanOrEqual(target.getTime());
    expect(row.due_at.getTime()).toBeLessThan(target.getTime() + 10 * 60_000);
    const push = DevicePush.parse(typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload);
    expect(push).toMatchObject({ token, priority: 'normal', collapseKey: 'digest', expiresAt, content: { title: 'later', badge: 3, sound: 'x' } });

    const at = new Date(Date.now() + 7_200_000).toISOString();
    const instant = randomUUID();
    expect((await herald('send', '--app', 'alpha', '--user', user, '--title', 'at', '--id', instant, '--deliver-at', at)).code).toBe(0);
    const atRow = await waitFor('scheduled at', async () => sys.database.db.kysely.selectFrom('scheduled_pushes').selectAll().where('job_id', '=', instant).executeTakeFirst());
    expect(atRow.due_at.toISOString()).toBe(at);
  });

  it('herald --version prints the version from package.json; parked list of an unknown queue is one line naming it', async () => {
    const { version } = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    expect(await herald('--version')).toMatchObject({ code: 0, stdout: `${version}\n` });
    const parked = await herald('parked', 'list', 'bogus');
    expect(parked.code).not.toBe(0);
    expect(parked.stderr).toMatch(/^herald: no queue "bogus": [^\n]*push\.apns\.send[^\n]*\n$/);
    expect((await herald('parked', 'list', Queues.apnsSend, '--json')).code).toBe(0);
  });

  it('documents the new routes in /openapi.json with the contract schemas', async () => {
    const doc = (await call(sys, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string; required: boolean }> }>>; components: { schemas: Record<string, unknown> } };
    expect(Object.keys(doc.paths['/v1/opt-outs'] ?? {}).sort()).toEqual(['delete', 'get', 'post']);
    expect(Object.keys(doc.paths['/v1/mutes'] ?? {}).sort()).toEqual(['delete', 'get', 'post']);
    expect(doc.paths['/v1/devices']?.['get']?.parameters?.map((p) => [p.name, p.in, p.required])).toEqual([['app', 'query', true], ['userId', 'query', true]]);
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(['OptOutChange', 'MuteCreate', 'MuteDelete', 'OptOutList', 'MuteList', 'DeviceList', 'UserErasureRequest', 'UserErasureView']));
    expect(Object.keys(doc.paths['/v1/users:erase'] ?? {})).toEqual(['post']);
  });
});
