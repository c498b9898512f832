import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Exchanges, Queues, parkedQueueFor } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker, type Broker } from '@herald/messaging';
import { peekMessages, waitFor } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { herald as runHerald } from '../support/cli.ts';
import { API_TEST_ENV, apiUrl, call } from '../support/http-api.ts';
import { job } from '../support/fixtures.ts';
import { monitorUrl } from '../support/monitor-client.ts';
import { startSystem, type System } from '../support/system.ts';

const PARKED = parkedQueueFor(Queues.jobs);
/** Parked by the demuxer as unknown-app: a replay may help once the app exists. */
const FIXABLE = ['fixable-1', 'fixable-2', 'fixable-3'];
/** Parked as malformed-json: a permanent rejection. */
const BROKEN = ['broken-1', 'broken-2'];

interface Answer {
  status: number;
  body: Record<string, unknown>;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * One request to the monitor with exactly the headers given (node:http, so Origin, Cookie and
 * Sec-Fetch-Site go out as a browser would send them).
 */
function dashboard(
  sys: System,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<Answer> {
  const url = new URL(path, monitorUrl(sys.service('monitor')));
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, headers: { ...(payload !== undefined && { 'content-type': 'application/json' }), ...opts.headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: Record<string, unknown> = {};
          try {
            body = JSON.parse(text) as Record<string, unknown>;
          } catch {
            // an HTML page
          }
          resolve({ status: res.statusCode ?? 0, body, text, headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** A GET with this key sent from another loopback address (`localAddress`), so a refusal it earns is its own. */
function getFrom(localAddress: string, url: string, key: string): Promise<{ status: number; retryAfter: unknown; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress, headers: bearer(key) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}
const ids = async (queue: string, sys: System) =>
  (await peekMessages(sys.vhost.name, queue, 100)).map((m) => m.properties.message_id);

describe('operator access: the dashboard and its write actions need an operator key, are CSRF-safe and audited', () => {
  let sys: System;
  let raw: Broker;
  let operatorId: string;
  let teamKey: string;

  /** `herald …` as a person runs it, with this system's settings; never throws (exit code in `code`). */
  const herald = (...args: string[]) => runHerald(sys.env, ...args);

  beforeAll(async () => {
    sys = await startSystem({ only: ['demuxer', 'monitor', 'api'], env: { ...API_TEST_ENV, MONITOR_POLL_MS: '500' } });
    raw = await connectBroker({
      url: sys.vhost.amqpUrl,
      logger: createLogger({ service: 'test', level: 'warn', format: 'json' }),
      connectionName: 'raw',
    });
    for (const id of FIXABLE) {
      await raw.publisher.publish({
        exchange: Exchanges.jobs,
        routingKey: Queues.jobs,
        body: Buffer.from(JSON.stringify(job({ id, app: 'nosuch', userId: 'u-1' }))),
        messageId: id,
      });
    }
    for (const id of BROKEN)
      await raw.publisher.publish({
        exchange: Exchanges.jobs,
        routingKey: Queues.jobs,
        body: Buffer.from('{"id": "broken'),
        messageId: id,
      });
    await waitFor(
      'every job parked by the demuxer',
      async () => (await ids(PARKED, sys)).length === FIXABLE.length + BROKEN.length,
    );
    // Nobody consumes push.jobs from here on: a replayed message stays there for the test to see.
    await sys.service('demuxer').stop('SIGTERM');
    operatorId = (await sys.database.db.apiKeys.list()).find((k) => k.kind === 'operator')?.id ?? '';
    teamKey = (await sys.database.db.apiKeys.create('team-a', ['*'])).key;
    await waitFor('the monitor to see the parked queue', async () => {
      const status = await dashboard(sys, 'GET', '/api/status', { headers: bearer(sys.operatorKey) });
      return (status.body['queues'] as Array<{ name: string }> | undefined)?.some((q) => q.name === PARKED);
    });
  });
  afterAll(async () => {
    await raw?.close();
    await sys?.stop();
  });

  it('replay without a credential (or with a wrong or team key) is 401 and replays nothing; metrics and health stay open', async () => {
    const replay = { id: FIXABLE[0] };
    const none = await dashboard(sys, 'POST', `/api/parked/${PARKED}/replay`, { body: replay });
    expect(none.status).toBe(401);
    expect(String(none.body['error'])).toMatch(/operator key is required/);
    expect(
      (await dashboard(sys, 'POST', `/api/parked/${PARKED}/replay`, { body: replay, headers: bearer('hko_000000000000_wrong') }))
        .status,
    ).toBe(401);
    expect(
      (await dashboard(sys, 'POST', `/api/parked/${PARKED}/replay`, { body: replay, headers: bearer(teamKey) })).status,
    ).toBe(401);
    expect((await dashboard(sys, 'POST', `/api/parked/${PARKED}/purge`, { body: replay })).status).toBe(401);
    for (const path of ['/api/status', '/api/history', `/api/parked/${PARKED}`])
      expect((await dashboard(sys, 'GET', path)).status, path).toBe(401);
    const page = await dashboard(sys, 'GET', '/');
    expect(page.status).toBe(401);
    expect(page.text).toMatch(/Log in with an operator key/);
    expect(page.text).not.toMatch(/Parked messages/);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect((await dashboard(sys, 'GET', '/metrics')).status).toBe(200);
    expect((await dashboard(sys, 'GET', '/healthz')).status).toBe(200);

    expect(await ids(PARKED, sys)).toContain(FIXABLE[0]);
    expect(await ids(Queues.jobs, sys)).not.toContain(FIXABLE[0]);
    expect(await sys.database.db.audit.list()).toEqual([]);
  });

  it('refuses cross-site writes: no CSRF header, a foreign Origin, Sec-Fetch-Site cross-site; then the same session with the header replays', async () => {
    const login = (headers: Record<string, string>) =>
      dashboard(sys, 'POST', '/api/login', { body: { key: sys.operatorKey }, headers });
    expect((await login({})).status).toBe(403);
    expect((await login({ 'x-herald-csrf': '1', origin: 'http://evil.example' })).status).toBe(403);
    expect(
      (await dashboard(sys, 'POST', '/api/login', { body: { key: teamKey }, headers: { 'x-herald-csrf': '1' } })).status,
    ).toBe(401);
    const ok = await login({ 'x-herald-csrf': '1' });
    expect(ok.status).toBe(200);
    expect(ok.body['operator']).toEqual({ id: operatorId, name: 'e2e' });
    const setCookie = String(ok.headers['set-cookie']);
    expect(setCookie).toMatch(/^herald_operator_session=[\w-]{40,}; HttpOnly; SameSite=Strict; Path=\//);
    const cookie = setCookie.split(';')[0] ?? '';
    const own = new URL(monitorUrl(sys.service('monitor'))).origin;
    const replay = (headers: Record<string, string>) =>
      dashboard(sys, 'POST', `/api/parked/${PARKED}/replay`, { body: { id: FIXABLE[0] }, headers: { cookie, ...headers } });

    const noHeader = await replay({ origin: own });
    expect([noHeader.status, noHeader.body['error']]).toEqual([403, expect.stringMatching(/x-herald-csrf/)]);
    const foreign = await replay({ 'x-herald-csrf': '1', origin: 'http://evil.example' });
    expect([foreign.status, foreign.body['error']]).toEqual([403, expect.stringMatching(/cross-origin request refused/)]);
    expect((await replay({ 'x-herald-csrf': '1', 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    const bearerForeign = await dashboard(sys, 'POST', `/api/parked/${PARKED}/replay`, {
      body: { id: FIXABLE[0] },
      headers: { ...bearer(sys.operatorKey), origin: 'http://evil.example' },
    });
    expect(bearerForeign.status).toBe(403);
    expect(await ids(PARKED, sys)).toContain(FIXABLE[0]);
    expect(await ids(Queues.jobs, sys)).not.toContain(FIXABLE[0]);

    // The dashboard's own request: same origin, the header, the session cookie.
    const sameSite = await replay({ 'x-herald-csrf': '1', origin: own, 'sec-fetch-site': 'same-origin' });
    expect([sameSite.status, sameSite.body['replayed'], sameSite.body['refused']]).toEqual([200, 1, []]);
    expect(await ids(Queues.jobs, sys)).toContain(FIXABLE[0]);
    expect(await ids(PARKED, sys)).not.toContain(FIXABLE[0]);

    // Logged out, the cookie opens nothing.
    expect((await dashboard(sys, 'POST', '/api/logout', { headers: { cookie, 'x-herald-csrf': '1' } })).status).toBe(200);
    expect((await dashboard(sys, 'GET', '/api/status', { headers: { cookie } })).status).toBe(401);
  });

  it('with the operator key a replay works, and the audit log records who, what and when (table and `herald audit`)', async () => {
    // The listing says where and why, not what: no user id or content of the parked jobs.
    const listing = await dashboard(sys, 'GET', `/api/parked/${PARKED}`, { headers: bearer(sys.operatorKey) });
    expect(listing.status).toBe(200);
    expect(listing.text).toContain(FIXABLE[1]);
    expect(listing.text).not.toContain('u-1');
    expect(listing.text).not.toContain('A friend liked your photo');
    const before = Date.now();
    const answer = await dashboard(sys, 'POST', `/api/parked/${PARKED}/replay`, {
      body: { id: FIXABLE[1] },
      headers: bearer(sys.operatorKey),
    });
    expect([answer.status, answer.body['replayed'], answer.body['refused']]).toEqual([200, 1, []]);
    expect(await ids(Queues.jobs, sys)).toContain(FIXABLE[1]);
    expect(await ids(PARKED, sys)).not.toContain(FIXABLE[1]);

    // A queue name that is not valid percent-encoding is the caller's mistake, not a 500 logged as the monitor's failure.
    const garbled = await dashboard(sys, 'GET', '/api/parked/push.jobs%E0%A4%A', { headers: bearer(sys.operatorKey) });
    expect([garbled.status, garbled.body['error']]).toEqual([400, 'the queue name is not valid percent-encoding']);

    const entry = (await sys.database.db.audit.list({ action: 'parked.replay' })).find((e) => e.request['id'] === FIXABLE[1]);
    expect(entry).toMatchObject({
      actor: { kind: 'operator', id: operatorId, name: 'e2e' },
      action: 'parked.replay',
      target: PARKED,
      request: { id: FIXABLE[1], force: false, via: 'dashboard' },
      outcome: 'ok',
      result: { replayed: 1, refused: [] },
    });
    expect(entry?.at.getTime()).toBeGreaterThanOrEqual(before - 1_000);
    expect(entry?.at.getTime()).toBeLessThanOrEqual(Date.now());
    expect(entry?.finishedAt).not.toBeNull();

    const cli = await herald('audit', '--action', 'parked.replay', '--json');
    expect(cli.code).toBe(0);
    const listed = JSON.parse(cli.stdout) as Array<{
      actor: { name: string };
      request: { id?: string };
      outcome: string;
      at: string;
    }>;
    expect(listed.find((e) => e.request.id === FIXABLE[1])).toMatchObject({ actor: { name: 'e2e' }, outcome: 'ok' });
    const table = await herald('audit', '--limit', '5');
    expect(table.stdout).toMatch(/AT\s+WHO\s+ACTION\s+TARGET/);
    expect(table.stdout).toMatch(new RegExp(`e2e \\(operator ${operatorId}\\)\\s+parked\\.replay\\s+push\\.jobs\\.parked`));
  });

  it('a permanent rejection is not replayed without force, with the reason; with force it is (dashboard and CLI)', async () => {
    const refused = await dashboard(sys, 'POST', `/api/parked/${PARKED}/replay`, {
      body: { id: BROKEN[0] },
      headers: bearer(sys.operatorKey),
    });
    expect(refused.status).toBe(409);
    expect(refused.body['code']).toBe('permanent-rejection');
    expect(String(refused.body['error'])).toMatch(
      /refused to replay 1 permanent rejection.*"malformed-json" \(its body is not valid JSON, so it would be parked again; e\.g\. broken-1\).*force/,
    );
    expect(await ids(PARKED, sys)).toContain(BROKEN[0]);
    expect(await ids(Queues.jobs, sys)).not.toContain(BROKEN[0]);
    const notBool = await dashboard(sys, 'POST', `/api/parked/${PARKED}/replay`, {
      body: { id: BROKEN[0], force: 'yes' },
      headers: bearer(sys.operatorKey),
    });
    expect(notBool.status).toBe(400);

    const forced = await dashboard(sys, 'POST', `/api/parked/${PARKED}/replay`, {
      body: { id: BROKEN[0], force: true },
      headers: bearer(sys.operatorKey),
    });
    expect([forced.status, forced.body['replayed']]).toEqual([200, 1]);
    expect(await ids(Queues.jobs, sys)).toContain(BROKEN[0]);
    expect(await ids(PARKED, sys)).not.toContain(BROKEN[0]);
    const entries = (await sys.database.db.audit.list({ action: 'parked.replay' })).filter((e) => e.request['id'] === BROKEN[0]);
    expect(entries.map((e) => [e.request['force'], e.outcome])).toEqual([
      [true, 'ok'],
      [false, 'refused'],
    ]);
    expect(entries[1]?.result).toMatchObject({ reason: expect.stringMatching(/malformed-json/) as unknown, replayed: 0 });

    // The CLI: refused with the reason and a non-zero exit, then --force.
    const cliRefused = await herald('parked', 'replay', Queues.jobs, '--id', BROKEN[1] ?? '');
    expect(cliRefused.code).toBe(1);
    expect(cliRefused.stdout).toMatch(/replayed 0 of \d+ parked message/);
    expect(cliRefused.stderr).toMatch(/refused to replay 1 permanent rejection.*"malformed-json".*Add --force/);
    expect(await ids(PARKED, sys)).toContain(BROKEN[1]);
    const cliForced = await herald('parked', 'replay', Queues.jobs, '--id', BROKEN[1] ?? '', '--force');
    expect(cliForced.code).toBe(0);
    expect(cliForced.stdout).toMatch(/replayed 1 of \d+ parked message/);
    expect(await ids(Queues.jobs, sys)).toContain(BROKEN[1]);
    const cliEntries = (await sys.database.db.audit.list({ action: 'parked.replay' })).filter((e) => e.actor.kind === 'cli');
    expect(cliEntries.map((e) => [e.request['force'], e.outcome, e.target])).toEqual([
      [true, 'ok', PARKED],
      [false, 'refused', PARKED],
    ]);
  });

  it('purge from the dashboard needs the key and is audited; admin routes take an operator key (audited by name), never a team key', async () => {
    expect((await dashboard(sys, 'POST', `/api/parked/${PARKED}/purge`, { body: { id: FIXABLE[2] } })).status).toBe(401);
    const purged = await dashboard(sys, 'POST', `/api/parked/${PARKED}/purge`, {
      body: { id: FIXABLE[2] },
      headers: bearer(sys.operatorKey),
    });
    expect([purged.status, purged.body['purged']]).toEqual([200, 1]);
    expect(await ids(PARKED, sys)).not.toContain(FIXABLE[2]);
    expect((await sys.database.db.audit.list({ action: 'parked.purge' }))[0]).toMatchObject({
      actor: { name: 'e2e' },
      target: PARKED,
      outcome: 'ok',
      result: { purged: 1 },
    });

    expect((await call(sys, 'POST', '/admin/apps', { key: teamKey, body: { id: 'ops-app' } })).status).toBe(401);
    expect((await call(sys, 'POST', '/admin/apps', { body: { id: 'ops-app' } })).status).toBe(401);
    const created = await call(sys, 'POST', '/admin/apps', {
      key: sys.operatorKey,
      body: { id: 'ops-app', apnsTopic: 'com.example.ops' },
    });
    expect(created.status).toBe(201);
    expect((await call(sys, 'POST', '/admin/apps/ops-app/disable', { key: API_TEST_ENV.HERALD_ADMIN_KEY })).status).toBe(200);
    const key = await call(sys, 'POST', '/admin/operator-keys', { key: sys.operatorKey, body: { name: 'bob' } });
    expect(key.status).toBe(201);
    expect(String(key.body['key'])).toMatch(/^hko_/);
    // An operator key is not a team key.
    expect((await call(sys, 'POST', '/v1/jobs', { key: sys.operatorKey, body: job({}) })).status).toBe(401);

    const admin = await sys.database.db.audit.list({ limit: 3 });
    expect(admin.map((e) => [e.action, e.target, e.actor.kind, e.actor.name, e.outcome])).toEqual([
      ['operator-key.create', 'operator:bob', 'operator', 'e2e', 'ok'],
      ['app.disable', 'ops-app', 'admin-key', 'admin key', 'ok'],
      ['app.create', 'ops-app', 'operator', 'e2e', 'ok'],
    ]);
    expect(admin[2]?.request).toEqual({ fields: ['apnsTopic', 'id'] });
    expect(JSON.stringify(admin[0])).not.toContain(String(key.body['key']));
  });

  it('the CLI makes operator keys that open the dashboard, and audits its own admin writes as user@host', async () => {
    expect((await herald('keys', 'create', '--operator', 'carol', '--team', 'x')).stderr).toMatch(/without --team and --apps/);
    const created = await herald('keys', 'create', '--operator', 'carol');
    expect(created.code).toBe(0);
    const key = /^(hko_\S+)$/m.exec(created.stdout)?.[1] ?? '';
    expect(key).not.toBe('');
    expect((await dashboard(sys, 'GET', '/api/session', { headers: bearer(key) })).body).toMatchObject({
      operator: { name: 'carol' },
    });
    expect(JSON.parse((await herald('keys', 'list', '--json')).stdout)).toContainEqual(
      expect.objectContaining({ kind: 'operator', team: 'carol', apps: '' }),
    );
    expect((await herald('apps', 'enable', 'ops-app')).code).toBe(0);
    const [enable, create] = await sys.database.db.audit.list({ limit: 2 });
    expect([enable?.action, enable?.target, enable?.actor.kind, enable?.result]).toEqual([
      'app.enable',
      'ops-app',
      'cli',
      expect.objectContaining({ id: 'ops-app', enabled: true }),
    ]);
    expect(enable?.actor.id).toMatch(/^.+@.+$/);
    expect([create?.action, create?.target, create?.actor.kind]).toEqual(['operator-key.create', 'operator:carol', 'cli']);
    expect(JSON.stringify(create)).not.toContain(key);
  });

  it("audits the CLI's other writes before they run: limits, job cancel, topics, follows, opt-outs and mutes", async () => {
    const posted = job({ userId: 'u-1' });
    expect((await call(sys, 'POST', '/v1/jobs', { key: teamKey, body: posted })).status).toBe(202);
    const token = 'ab'.repeat(32);
    const runs: string[][] = [
      ['limits', 'set', '--platform', 'apns', '--rate', '500'],
      ['limits', 'set', '--platform', 'fcm', '--app', 'demo', '--rate', '50'],
      ['limits', 'remove', '--platform', 'fcm', '--app', 'demo'],
      ['job', 'cancel', posted.id],
      ['topics', 'create', 'news', '--app', 'demo'],
      ['topics', 'subscribe', 'news', '--app', 'demo', '--user', 'u-1', '--device', `apns:${token}`],
      ['follows', 'add', '--app', 'demo', '--follower', 'u-1', '--followee', 'u-2'],
      ['opt-out', '--app', 'demo', '--user', 'u-1', '--category', 'promo'],
      ['mute', '--all-apps', '--user', 'u-1', '--object', 'thread:7', '--undo'],
    ];
    for (const args of runs) expect((await herald(...args)).code, args.join(' ')).toBe(0);
    // A job Herald does not have: refused on stderr as before, and recorded with known: false.
    expect((await herald('cancel', '--job', 'no-such-job')).code).toBe(1);

    const entries = (await sys.database.db.audit.list({ limit: runs.length + 1 })).reverse(); // oldest first
    expect(entries.map((e) => [e.action, e.target, e.actor.kind, e.outcome])).toEqual([
      ['limit.set', 'apns', 'cli', 'ok'],
      ['limit.set', 'fcm:demo', 'cli', 'ok'],
      ['limit.remove', 'fcm:demo', 'cli', 'ok'],
      ['job.cancel', posted.id, 'cli', 'ok'],
      ['topic.create', 'demo/news', 'cli', 'ok'],
      ['topic.subscribe', 'demo/news', 'cli', 'ok'],
      ['follow.add', 'demo/u-1', 'cli', 'ok'],
      ['opt-out.add', 'demo/u-1', 'cli', 'ok'],
      ['mute.remove', '*/u-1', 'cli', 'ok'],
      ['job.cancel', 'no-such-job', 'cli', 'ok'],
    ]);
    const [limitSet, , limitRemove, cancelled, , subscribed, followed, optedOut, unmuted, unknownJob] = entries;
    expect(limitSet?.actor.id).toMatch(/^.+@.+$/);
    expect([limitSet?.request, limitSet?.result]).toEqual([{ platform: 'apns', rate: 500, via: 'cli' }, { ratePerSec: 500 }]);
    expect(limitRemove?.result).toEqual({ removed: true });
    expect(cancelled?.result).toEqual({ known: true, fanout: false, scheduled: 0, alreadyDone: false });
    expect(unknownJob?.result).toEqual({ known: false, fanout: false, scheduled: 0, alreadyDone: false });
    expect(subscribed?.request).toMatchObject({ users: ['u-1'], devices: [`apns:…${token.slice(-6)}`] });
    expect(JSON.stringify(subscribed)).not.toContain(token);
    expect(subscribed?.result).toEqual({ applied: 2, stale: 0, subscribers: 2 });
    expect([followed?.request, followed?.result]).toEqual([expect.objectContaining({ followee: 'u-2' }), { result: 'applied' }]);
    expect([optedOut?.request, optedOut?.result]).toEqual([{ category: 'promo', via: 'cli' }, { changed: true }]);
    expect([unmuted?.request, unmuted?.result]).toEqual([{ objectId: 'thread:7', via: 'cli' }, { changed: false }]);
    for (const e of entries) expect(e.finishedAt, e.action).not.toBeNull();
  });

  it('the CLI refuses, with a non-zero exit, a limit or key that is not there and an empty --app; a pasted key revokes by its id', async () => {
    // Before, each printed on stdout and exited 0 ("no such limit", "no live key"), and an empty
    // --app (a script's unset variable) removed the platform-wide budget.
    expect((await herald('limits', 'set', '--platform', 'web', '--rate', '300')).code).toBe(0);
    const empty = await herald('limits', 'remove', '--platform', 'web', '--app', '');
    expect([empty.code, empty.stderr]).toEqual([1, expect.stringMatching(/^herald: --app is empty/)]);
    expect((await herald('limits', 'set', '--platform', 'web', '--app', ' ', '--rate', '1')).code).toBe(1);
    expect(await sys.database.db.rateLimits.list()).toContainEqual(expect.objectContaining({ platform: 'web', app: '', ratePerSec: 300 }));
    const missing = await herald('limits', 'remove', '--platform', 'web', '--app', 'demo');
    expect([missing.code, missing.stderr]).toEqual([1, 'herald: no web:demo limit: `herald limits list` shows them\n']);
    const [refused] = await sys.database.db.audit.list({ limit: 1 });
    expect([refused?.action, refused?.outcome]).toEqual(['limit.remove', 'refused']);

    const created = await herald('keys', 'create', '--team', 'ops-revoke', '--apps', 'demo');
    const key = /^(hk_\S+)$/m.exec(created.stdout)?.[1] ?? '';
    const id = /^hk_([0-9a-f]{12})_/.exec(key)?.[1] ?? '';
    expect(id).not.toBe('');
    const typo = await herald('keys', 'revoke', 'ffffffffffff');
    expect([typo.code, typo.stderr]).toEqual([1, expect.stringMatching(/^herald: no live key ffffffffffff/)]);
    // The key itself pasted: revoked by its id, and the secret stays out of the audit log.
    expect(await herald('keys', 'revoke', key)).toMatchObject({ code: 0, stdout: `key ${id} revoked\n` });
    expect((await call(sys, 'GET', '/v1/jobs/any', { key })).status).toBe(401);
    const [revoked] = await sys.database.db.audit.list({ limit: 1 });
    expect([revoked?.action, revoked?.target, revoked?.outcome]).toEqual(['key.revoke', id, 'ok']);
    expect(JSON.stringify(await sys.database.db.audit.list({ limit: 5 }))).not.toContain(key);
  });

  it("takes an app's secrets from files, so they are not on its command line; one given inline draws a warning", async () => {
    // Before, a passphrase, an access token or a proxy password could only be typed inline, where ps and shell history show them.
    const dir = mkdtempSync(join(tmpdir(), 'herald-cli-secrets-'));
    const tokenFile = join(dir, 'token');
    const proxyFile = join(dir, 'proxy');
    writeFileSync(tokenFile, 'ya29.local-token\n');
    writeFileSync(proxyFile, 'http://svc:s3cret@127.0.0.1:3128\n');
    const quiet = await herald('apps', 'add', 'cli-secrets', '--fcm-access-token-file', tokenFile, '--fcm-project', 'p-1', '--fcm-proxy-url-file', proxyFile);
    expect([quiet.code, quiet.stderr]).toEqual([0, '']);
    const app = await sys.database.db.apps.get('cli-secrets');
    expect([app?.fcmProjectId, app?.fcmConnection?.proxy]).toEqual(['p-1', true]);
    const loud = await herald('apps', 'update', 'cli-secrets', '--fcm-proxy-url', 'http://svc:s3cret@127.0.0.1:3128');
    expect([loud.code, loud.stderr]).toEqual([0, expect.stringMatching(/^herald: warning: --fcm-proxy-url on the command line is visible to other users \(ps\)/)]);
    expect((await herald('apps', 'update', 'cli-secrets', '--fcm-proxy-url', 'http://127.0.0.1:3128')).stderr).toBe('');
    const both = await herald('apps', 'rotate', 'cli-secrets', '--fcm-access-token', 't', '--fcm-access-token-file', tokenFile, '--fcm-project', 'p-1');
    expect([both.code, both.stderr]).toEqual([1, 'herald: give --fcm-access-token or --fcm-access-token-file, not both\n']);
    // `apps add` on an existing app is one change: its last step refused (an APNs endpoint for an app
    // with no APNs credentials), its credential rotation before it is not kept either.
    const version = (await sys.database.db.apps.get('cli-secrets'))?.credentialsVersion;
    const refused = await herald('apps', 'add', 'cli-secrets', '--fcm-access-token-file', tokenFile, '--fcm-project', 'p-2', '--apns-address', '127.0.0.1');
    expect(refused.code).toBe(1);
    expect(await sys.database.db.apps.get('cli-secrets')).toMatchObject({ credentialsVersion: version, fcmProjectId: 'p-1' });
  });

  // A 401 at either door left no line, and HERALD_ADMIN_KEY could be guessed at any rate.
  it('logs refused keys at both doors (who and where, never the key) and answers an address guessing at /admin/ 429', async () => {
    // From 127.0.0.2: the refusal is that address's alone, the other tests' 127.0.0.1 keeps the admin routes.
    const GUESSER = '127.0.0.2';
    const guess = (i: number) => `${'0'.repeat(40)}-guess-${i}`;
    const base = apiUrl(sys);
    for (let i = 0; i < 10; i++) expect((await getFrom(GUESSER, `${base}/admin/apps`, guess(i))).status).toBe(401);
    const blocked = await getFrom(GUESSER, `${base}/admin/apps`, API_TEST_ENV.HERALD_ADMIN_KEY);
    expect([blocked.status, blocked.retryAfter, JSON.parse(blocked.body)]).toEqual([
      429,
      '60',
      { error: { code: 'too-many-attempts', message: expect.stringMatching(/^too many failed admin authentications from this address/) as unknown } },
    ]);
    expect((await getFrom(GUESSER, `${base}/v1/jobs/no-such-job`, teamKey)).status).toBe(404);
    expect((await getFrom(GUESSER, `${base}/v1/jobs/no-such-job`, guess(99))).status).toBe(401);
    expect((await call(sys, 'GET', '/admin/apps', { key: API_TEST_ENV.HERALD_ADMIN_KEY })).status).toBe(200);

    const wrongOperator = `hko_${'0'.repeat(12)}_${'x'.repeat(43)}`;
    expect((await dashboard(sys, 'GET', '/api/status', { headers: { ...bearer(wrongOperator), 'x-forwarded-for': '203.0.113.7' } })).status).toBe(401);
    const login = await dashboard(sys, 'POST', '/api/login', { body: { key: sys.operatorKey }, headers: { 'x-herald-csrf': '1' } });
    const cookie = String(login.headers['set-cookie']).split(';')[0] ?? '';
    const forged = await dashboard(sys, 'POST', `/api/parked/${PARKED}/purge`, { body: { id: 'x' }, headers: { cookie, origin: 'http://evil.example' } });
    expect(forged.status).toBe(403);

    // Each kind is said once every few seconds (then with how many more): waited for, as the last may be held back.
    const api = sys.service('api').logs;
    const monitor = sys.service('monitor').logs;
    const logged = (logs: Array<Record<string, unknown>>, fields: Record<string, unknown>) =>
      logs.some((l) => l['level'] === 40 && Object.entries(fields).every(([k, v]) => JSON.stringify(l[k]) === JSON.stringify(v)));
    await waitFor('the refusals logged', () =>
      logged(api, { msg: 'authentication refused', door: 'admin', remote: GUESSER, method: 'GET', route: '/admin/apps' }) &&
      logged(api, { msg: 'authentication refused', door: 'team', remote: GUESSER, route: '/v1/jobs/:id' }) &&
      logged(api, { msg: 'admin routes refused to an address (429) after repeated failed authentications', remote: GUESSER, failures: 10 }) &&
      logged(monitor, { msg: 'dashboard request refused', status: 401, remote: '127.0.0.1', forwardedFor: '203.0.113.7', path: '/api/status', credential: 'bearer' }) &&
      logged(monitor, { msg: 'dashboard request refused', status: 403, path: `/api/parked/${PARKED}/purge`, credential: 'cookie', operator: { id: operatorId, name: 'e2e' } }),
    );
    const said = JSON.stringify([...api, ...monitor]);
    for (const key of [guess(0), guess(9), guess(99), wrongOperator, sys.operatorKey, API_TEST_ENV.HERALD_ADMIN_KEY]) expect(said).not.toContain(key);
  });
});
