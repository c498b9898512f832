import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { derivePushId, destinationOf, parkedQueueFor, Queues, type DevicePush } from '@herald/contracts';
import { toJobStatus } from '@herald/db';
import { createLogger } from '@herald/logging';
import { connectBroker, heraldTopology, HeraldHeaders, type Broker } from '@herald/messaging';
import { createTestDatabase, createTestVhost, peekMessages, type TestDatabase, type TestVhost } from '@herald/testing';

const logger = createLogger({ service: 'cli-test', level: 'silent' });
let t: TestDatabase;
let vhost: TestVhost;
let broker: Broker;

beforeAll(async () => {
  t = await createTestDatabase('cli_publish');
  vhost = await createTestVhost('clipublish');
  broker = await connectBroker({ url: vhost.amqpUrl, logger, connectionName: 'cli-test' });
  await broker.applyTopology(heraldTopology({ retryDelaysMs: [1000] }));
  await t.db.apps.upsert({ id: 'paused', enabled: false });
  await t.db.apps.upsert({ id: 'live' });
});
afterAll(async () => {
  await broker?.close();
  await vhost?.delete();
  await t?.drop();
});

/** `herald …` as a person runs it, against this file's schema and vhost, with what it printed on stdout. */
function heraldPrinting(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return heraldWith({}, ...args);
}

/** heraldPrinting with settings of its own (`overrides` over this file's). */
function heraldWith(overrides: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, AMQP_URL: vhost.amqpUrl, DATABASE_URL: t.url, DATABASE_SCHEMA: t.schema, ...overrides };
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'apps/cli/src/main.ts', ...args], { env, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout, stderr }),
    );
  });
}

/** `herald …` as a person runs it: its exit code and stderr. */
async function herald(...args: string[]): Promise<{ code: number; stderr: string }> {
  const { code, stderr } = await heraldPrinting(...args);
  return { code, stderr };
}

const TOKEN = 'ab'.repeat(32);

describe('herald register / unregister for a disabled app', () => {
  it("publishes the unregister (a logout during an incident) and the register (another user's login): state, not sends", async () => {
    const unregister = await herald('unregister', '--app', 'paused', '--platform', 'apns', '--token', TOKEN);
    expect(unregister).toEqual({ code: 0, stderr: '' });
    const register = await herald('register', '--app', 'paused', '--platform', 'apns', '--token', TOKEN, '--user', 'u1');
    expect(register).toEqual({ code: 0, stderr: '' });
    const queued = (await peekMessages(vhost.name, Queues.registrations)).map((m) => JSON.parse(m.payload) as Record<string, unknown>);
    expect(queued).toEqual([
      expect.objectContaining({ kind: 'unregister', app: 'paused', platform: 'apns', token: TOKEN }),
      expect.objectContaining({ kind: 'register', app: 'paused', platform: 'apns', token: TOKEN, userId: 'u1' }),
    ]);
  });

  it('register --previous-token publishes the token it replaces; one naming the token itself is refused, publishing nothing', async () => {
    const rotated = 'cd'.repeat(32);
    const same = await herald('register', '--app', 'live', '--platform', 'apns', '--token', rotated, '--user', 'u1', '--previous-token', rotated.toUpperCase());
    expect(same.code).not.toBe(0);
    expect(same.stderr).toMatch(/previousToken/);
    expect(await herald('register', '--app', 'live', '--platform', 'apns', '--token', rotated, '--user', 'u1', '--previous-token', TOKEN)).toEqual({ code: 0, stderr: '' });
    const queued = (await peekMessages(vhost.name, Queues.registrations)).map((m) => JSON.parse(m.payload) as Record<string, unknown>).filter((m) => m['token'] === rotated);
    expect(queued).toEqual([expect.objectContaining({ kind: 'register', app: 'live', token: rotated, previousToken: TOKEN, userId: 'u1' })]);
  });

  it('refuses an unknown app, publishing nothing', async () => {
    const r = await herald('unregister', '--app', 'ghost', '--platform', 'apns', '--token', TOKEN);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/unknown app "ghost"/);
    expect((await peekMessages(vhost.name, Queues.registrations)).filter((m) => m.payload.includes('ghost'))).toEqual([]);
  });
});

describe('herald send, apps add and parked list: what an operator types wrong', () => {
  // Checked only after the job was published: the command failed, and run again it published the job a second time under a new id.
  it('send refuses a bad --trace-timeout before publishing anything', async () => {
    const r = await herald('send', '--app', 'live', '--user', 'u1', '--category', 'news', '--title', 'Hi', '--trace', '--trace-timeout', '1m');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--trace-timeout/);
    expect(await peekMessages(vhost.name, Queues.jobs)).toEqual([]);
  });

  it('send to a topic no one created is refused, naming it, before anything is published; to one that exists it publishes the audience job', async () => {
    const unknown = await herald('send', '--app', 'live', '--topic', 'no-such-topic', '--title', 'Hi');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/unknown topic "no-such-topic" of app "live"/);
    expect(await peekMessages(vhost.name, Queues.jobs)).toEqual([]);
    await t.db.kysely.insertInto('topics').values({ app: 'live', name: 'scores' }).execute();
    const sent = await herald('send', '--app', 'live', '--topic', 'scores', '--segment', 'platform = "apns"', '--title', 'Goal', '--id', 'cli-topic-job');
    expect(sent).toEqual({ code: 0, stderr: '' });
    const jobs = (await peekMessages(vhost.name, Queues.jobs)).map((m) => JSON.parse(m.payload) as Record<string, unknown>);
    expect(jobs).toEqual([expect.objectContaining({ id: 'cli-topic-job', app: 'live', audience: { topic: 'scores', segment: 'platform = "apns"' } })]);
    expect(jobs[0]).not.toHaveProperty('userId');
  });

  // Before, the client's notice went out as a JSON log line on stdout, before the command's own output.
  it("send says what Herald adapts of the job in words on stderr, and leaves stdout to the command's output", async () => {
    const expiresAt = new Date(Date.now() + 40 * 86_400_000).toISOString();
    const sent = await heraldPrinting('send', '--app', 'live', '--user', 'u1', '--title', 'Hi', '--expires-at', expiresAt, '--id', 'cli-notice-job');
    expect(sent.code).toBe(0);
    // stdout is the command's output alone, one JSON document (a log line before it made it two).
    expect(JSON.parse(sent.stdout)).toMatchObject({ published: 'push job', id: 'cli-notice-job' });
    expect(sent.stderr).toMatch(/^note \(job cli-notice-job\): .*28 days/m);
  });

  it('apps add on an app disabled during an incident leaves it disabled; --disabled disables one', async () => {
    expect((await herald('apps', 'add', 'paused', '--apns-topic', 'com.example.paused')).code).toBe(0);
    expect(await t.db.apps.get('paused')).toMatchObject({ enabled: false, apnsTopic: 'com.example.paused' });
    expect((await herald('apps', 'add', 'live', '--disabled')).code).toBe(0);
    expect((await t.db.apps.get('live'))?.enabled).toBe(false);
    await t.db.apps.upsert({ id: 'live', enabled: true });
  });

  it('parked replay refuses an age that is no ISO-8601 duration, and an age with --id, naming the flag', async () => {
    const hours = await herald('parked', 'replay', 'push.apns.send', '--all', '--newer-than', '6h');
    expect(hours.code).not.toBe(0);
    expect(hours.stderr).toMatch(/--newer-than must be an ISO-8601 duration such as PT6H or P2D, got "6h"/);
    const withId = await herald('parked', 'purge', 'push.apns.send', '--id', 'x', '--older-than', 'P2D');
    expect(withId.code).not.toBe(0);
    expect(withId.stderr).toMatch(/--newer-than and --older-than go with --code or --all/);
  });

  it('topics list says how to ask for the next page when there are more topics than a page, and --after gives it', async () => {
    // Before, the list stopped at 1,000 topics and said nothing of the rest.
    await t.db.apps.upsert({ id: 'many' });
    await t.db.kysely.insertInto('topics').values(Array.from({ length: 1001 }, (_, i) => ({ app: 'many', name: `t-${String(i).padStart(4, '0')}` }))).execute();
    const first = await herald('topics', 'list', '--app', 'many');
    expect(first).toEqual({ code: 0, stderr: 'more: herald topics list --app many --after t-0999\n' });
    expect(await herald('topics', 'list', '--app', 'many', '--after', 't-0999')).toEqual({ code: 0, stderr: '' });
    const bad = await herald('topics', 'list', '--app', 'many', '--after', '');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--after/);
  });

  it('parked list refuses a --limit that is no positive integer instead of printing an empty queue', async () => {
    for (const limit of ['ten', '0']) {
      const r = await herald('parked', 'list', 'push.jobs', '--limit', limit);
      expect([limit, r.code === 0, r.stderr]).toEqual([limit, false, expect.stringMatching(/--limit must be a positive integer/)]);
    }
  });
});

describe('herald parked and another operation on the same queue', () => {
  // Before, a list or replay beside another missed the messages the other held: "(none)", "replayed 0 of 0", exit 0.
  it("waits for another operator's list or replay of the queue to end (its lease), then does its own", async () => {
    await broker.publisher.publish({ exchange: '', routingKey: `${Queues.fcmSend}.parked`, body: { app: 'acme', pushId: 'held-1' }, messageId: 'held-1' });
    await t.db.kysely
      .insertInto('leases')
      .values({ name: `parked:${Queues.fcmSend}.parked`, holder: 'the dashboard of the monitor on m-1 (pid 9)', expires_at: new Date(Date.now() + 1_500) })
      .execute();
    const started = performance.now();
    const listed = await heraldPrinting('parked', 'list', Queues.fcmSend, '--json');
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { id: string }[]).map((r) => r.id)).toEqual(['held-1']);
    // The dashboard's lease ran out (its holder gone) before the list read anything.
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_200);
  });

  // In an incident that took PostgreSQL down, an operator still reads what is parked (a list needed RabbitMQ alone before the lease).
  it('lists without the lease, and says so, when PostgreSQL does not answer', async () => {
    const listed = await heraldWith({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' }, 'parked', 'list', Queues.fcmSend, '--json');
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { id: string }[]).map((r) => r.id)).toContain('held-1');
    expect(listed.stderr).toMatch(/could not take push\.fcm\.send\.parked's lease \(PostgreSQL: .*\); read without it/);
  });
});

describe('herald parked, stopped by Ctrl-C', () => {
  // Before, the stopped run's lease row stayed for 90 s: the operator's next command waited 30 s and was refused, naming the run just stopped.
  it('releases the queue at once and exits 130, so the next command runs straight away', async () => {
    await Promise.all(
      Array.from({ length: 5_000 }, (_, i) => broker.publisher.publish({ exchange: '', routingKey: `${Queues.webSend}.parked`, body: { app: 'acme', pushId: `w-${i}` }, messageId: `w-${i}` })),
    );
    const env = { ...process.env, AMQP_URL: vhost.amqpUrl, DATABASE_URL: t.url, DATABASE_SCHEMA: t.schema };
    // An app no message has: the list reads the whole queue, a message a round trip, showing its progress past 1,000.
    const child = spawn(process.execPath, ['--import', 'tsx', 'apps/cli/src/main.ts', 'parked', 'list', Queues.webSend, '--app', 'ghost'], { env });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
    const leaseRows = async () => (await t.db.kysely.selectFrom('leases').select('holder').where('name', '=', `parked:${Queues.webSend}.parked`).execute()).length;
    await expect.poll(() => /^list: \d+\/5000 /m.test(stderr), { timeout: 30_000, interval: 20 }).toBe(true);
    expect(await leaseRows()).toBe(1);
    child.kill('SIGINT');
    const [code] = await exited;
    expect(code).toBe(130);
    expect(stderr).toContain("interrupted: push.web.send.parked's lease released");
    expect(await leaseRows()).toBe(0);
    // Its messages went back with its connection: a list run now reads them all, without waiting.
    const started = performance.now();
    const again = await heraldPrinting('parked', 'list', Queues.webSend, '--app', 'acme', '--limit', '1', '--json');
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/of 5000 parked message\(s\)/);
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  // Before, the signal exited the CLI on the spot and the replay's audit row read "started" for good.
  it("ends a replay's audit row as failed, interrupted, and exits 130", async () => {
    // The 5,000 of the test above are still parked: replayed as the same app, a chunk at a time.
    const env = { ...process.env, AMQP_URL: vhost.amqpUrl, DATABASE_URL: t.url, DATABASE_SCHEMA: t.schema };
    const child = spawn(process.execPath, ['--import', 'tsx', 'apps/cli/src/main.ts', 'parked', 'replay', Queues.webSend, '--all', '--app', 'acme'], { env });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
    await expect.poll(() => /^replay: \d+\/5000 /m.test(stderr), { timeout: 30_000, interval: 5 }).toBe(true);
    child.kill('SIGINT');
    const [code] = await exited;
    expect(code).toBe(130);
    expect(stderr).toContain("interrupted: push.web.send.parked's lease released (SIGINT)");
    const rows = await t.db.kysely.selectFrom('audit_log').select(['outcome', 'result', 'finished_at']).where('action', '=', 'parked.replay').execute();
    expect(rows).toEqual([{ outcome: 'failed', result: { error: expect.any(String) }, finished_at: expect.any(Date) }]);
    // How far it got, and nothing lost: what it says it replayed is on the work queue, the rest still parked.
    const said = /^interrupted: push\.web\.send\.parked's lease released \(SIGINT\): (\d+) replayed of (\d+) looked at before it stopped; the rest stay parked$/.exec((rows[0]?.result as { error: string }).error);
    const replayed = Number(said?.[1] ?? expect.fail(`audit row: ${JSON.stringify(rows[0]?.result)}`));
    expect(replayed).toBeGreaterThan(0);
    expect(replayed).toBeLessThan(5_000);
    await expect.poll(async () => (await broker.queueCounts([Queues.webSend, `${Queues.webSend}.parked`])).get(`${Queues.webSend}.parked`)?.ready).toBe(5_000 - replayed);
    expect((await broker.queueCounts([Queues.webSend])).get(Queues.webSend)?.ready).toBe(replayed);
  });
});

describe('herald parked list', () => {
  // Before, --app filtered only the first --limit messages read: one app's parks behind another's listed "(none)".
  it("lists an app's parks found beyond the first --limit messages, and says on stderr when it stopped at the limit or nothing matched", async () => {
    const park = (id: string, app: string) =>
      broker.publisher.publish({ exchange: '', routingKey: `${Queues.apnsSend}.parked`, body: { app, pushId: id }, messageId: id });
    await Promise.all(Array.from({ length: 25 }, (_, i) => park(`acme-${i}`, 'acme')));
    for (let i = 0; i < 5; i++) await park(`shop-${i}`, 'shop');
    const ids = (stdout: string) => (JSON.parse(stdout) as { id: string }[]).map((r) => r.id);

    const first = await heraldPrinting('parked', 'list', Queues.apnsSend, '--app', 'shop', '--limit', '3', '--json');
    expect([first.code, ids(first.stdout), first.stderr]).toEqual([0, ['shop-0', 'shop-1', 'shop-2'], 'looked at 28 of 30 parked message(s) in push.apns.send.parked; the first 3 matching shown (--limit 3): there may be more\n']);
    // What a list read goes back to the queue, not always in the same order: compared sorted.
    const all = await heraldPrinting('parked', 'list', Queues.apnsSend, '--app', 'shop', '--limit', '25', '--json');
    expect([all.code, ids(all.stdout).sort(), all.stderr]).toEqual([0, ['shop-0', 'shop-1', 'shop-2', 'shop-3', 'shop-4'], '']);
    const none = await heraldPrinting('parked', 'list', Queues.apnsSend, '--app', 'ghost', '--newer-than', 'PT6H');
    expect(none).toEqual({ code: 0, stdout: '(none)\n', stderr: 'looked at all 30 parked message(s) in push.apns.send.parked; none is of app "ghost" and younger than 6 h\n' });
  });
});

describe('herald parked list / replay of webhook deliveries', () => {
  // Team A's receiver failed for an hour and is fixed: A's deliveries are replayed, not every team's.
  it("lists a subscription's parks with their team and subscription, and replays one team's retries-exhausted only", async () => {
    const [s1, s2] = [randomUUID(), randomUUID()];
    const park = (id: string, code: string, team: string, subscriptionId: string) =>
      broker.publisher.publish({
        exchange: '',
        routingKey: parkedQueueFor(Queues.webhookSend),
        body: { notificationId: randomUUID(), subscriptionId, diff: {} },
        messageId: id,
        // As the webhook pusher parks it.
        headers: { [HeraldHeaders.parkedCode]: code, [HeraldHeaders.originalQueue]: Queues.webhookSend, [HeraldHeaders.team]: team, [HeraldHeaders.subscription]: subscriptionId },
      });
    await park('a-503', 'retries-exhausted', 'team-a', s1);
    await park('b-503', 'retries-exhausted', 'team-b', s2);
    await park('a-401', 'receiver-rejected', 'team-a', s1);
    const rows = (stdout: string) => (JSON.parse(stdout) as Array<{ id: string; app: string; subscription: string; code: string }>).map((r) => [r.id, r.app, r.subscription, r.code]).sort();

    const ofS1 = await heraldPrinting('parked', 'list', Queues.webhookSend, '--subscription', s1, '--json');
    expect([ofS1.code, rows(ofS1.stdout), ofS1.stderr]).toEqual([0, [['a-401', 'team-a', s1, 'receiver-rejected'], ['a-503', 'team-a', s1, 'retries-exhausted']], '']);
    const table = await heraldPrinting('parked', 'list', Queues.webhookSend, '--app', 'team-b');
    expect(table.stdout).toMatch(new RegExp(`^ID +APP +SUBSCRIPTION +CODE .*\nb-503 +team-b +${s2} +retries-exhausted `));

    const replay = await heraldPrinting('parked', 'replay', Queues.webhookSend, '--code', 'retries-exhausted', '--app', 'team-a');
    expect(replay).toEqual({ code: 0, stdout: 'replayed 1 of 3 parked message(s)\n', stderr: '' });
    expect((await peekMessages(vhost.name, Queues.webhookSend)).map((m) => m.properties.message_id)).toEqual(['a-503']);
    // A subscription with nothing of that code says so and exits 1, rather than "replayed 0".
    const none = await herald('parked', 'replay', Queues.webhookSend, '--code', 'retries-exhausted', '--subscription', s1);
    expect(none).toEqual({ code: 1, stderr: expect.stringContaining(`none of the 2 parked message(s) in push.webhook.send.parked of subscription "${s1}" was parked with code "retries-exhausted"`) });
    const withId = await herald('parked', 'replay', Queues.webhookSend, '--id', 'a-401', '--subscription', s1);
    expect([withId.code, withId.stderr]).toEqual([1, expect.stringMatching(/--app and --subscription go with --code or --all/)]);
  });
});

describe('herald limits set', () => {
  it("refuses an app budget for an app that does not exist (a typo limited nothing), and sets one for an app that does", async () => {
    const typo = await herald('limits', 'set', '--platform', 'fcm', '--rate', '50', '--app', 'Live');
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toMatch(/unknown app "Live"/);
    expect((await t.db.rateLimits.list()).filter((r) => r.app === 'Live')).toEqual([]);
    expect(await herald('limits', 'set', '--platform', 'fcm', '--rate', '50', '--app', 'live')).toEqual({ code: 0, stderr: '' });
    expect((await t.db.rateLimits.list()).find((r) => r.app === 'live')).toMatchObject({ platform: 'fcm', ratePerSec: 50 });
    // A webhook budget's --app is a destination host:port, not an app.
    expect(await herald('limits', 'set', '--platform', 'webhook', '--rate', '5', '--app', 'hooks.example:443')).toEqual({ code: 0, stderr: '' });
  });

  it('keys a webhook budget by the destination its deliveries use (host in lower case, port given), whatever the spelling; refuses what is no destination', async () => {
    for (const spelling of ['Hooks.Limited.example', 'hooks.limited.example:443', 'https://HOOKS.limited.example/herald?x=1']) {
      expect(await herald('limits', 'set', '--platform', 'webhook', '--rate', '7', '--app', spelling)).toEqual({ code: 0, stderr: '' });
    }
    expect(await herald('limits', 'set', '--platform', 'webhook', '--rate', '8', '--app', 'http://localhost:8080/hook')).toEqual({ code: 0, stderr: '' });
    const webhookBudgets = (await t.db.rateLimits.list()).filter((r) => r.platform === 'webhook' && r.app !== 'hooks.example:443');
    expect(webhookBudgets.map((r) => [r.app, r.ratePerSec]).sort()).toEqual([['hooks.limited.example:443', 7], ['localhost:8080', 8]]);
    // What the webhook pusher looks its budget up by, for a subscription to that URL.
    expect(destinationOf('https://hooks.limited.example/any/path')).toBe('hooks.limited.example:443');
    for (const bad of ['hooks.example.com/path', 'foo://Hooks.Example.com', 'user:pw@hooks.example.com']) {
      const refused = await herald('limits', 'set', '--platform', 'webhook', '--rate', '7', '--app', bad);
      expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/--app for webhook must be a destination host or host:port/)]);
    }
    expect(await herald('limits', 'remove', '--platform', 'webhook', '--app', 'HOOKS.limited.example:443')).toEqual({ code: 0, stderr: '' });
    expect((await t.db.rateLimits.list()).filter((r) => r.app === 'hooks.limited.example:443')).toEqual([]);
  });
});

const statusOf = async (job: string) => {
  const record = await t.db.jobs.status(job);
  if (record === undefined) throw new Error(`no job ${job}`);
  const { state, inFlight, delivered, parked } = toJobStatus(record);
  return { state, inFlight, delivered, parked };
};

/** A job of two device pushes: one delivered, one parked in push.apns.send.parked as the pusher parks it (provider-down). */
async function deliveredAndParked(): Promise<{ job: string; parkedPush: string }> {
  const job = randomUUID();
  const [sent, held] = [derivePushId(job, '1'), derivePushId(job, '2')];
  await t.db.jobs.recordDemux([{ id: job, app: 'demo', targeted: 2, outcome: 'fanned-out' }]);
  await t.db.jobs.recordOutcomes([
    { pushId: sent, jobId: job, outcome: 'delivered' },
    { pushId: held, jobId: job, outcome: 'parked', code: 'provider-down', reason: 'APNs did not answer' },
  ]);
  const push: DevicePush = {
    version: 1,
    pushId: held,
    jobId: job,
    deviceId: '2',
    app: 'demo',
    platform: 'apns',
    token: 'ab'.repeat(32),
    userId: 'u1',
    content: { title: 'hi' },
    priority: 'high',
    acceptedAt: new Date().toISOString(),
  };
  await broker.publisher.publish({
    exchange: '',
    routingKey: parkedQueueFor(Queues.apnsSend),
    body: push,
    messageId: held,
    headers: {
      [HeraldHeaders.parkedCode]: 'provider-down',
      [HeraldHeaders.parkedReason]: 'APNs did not answer',
      [HeraldHeaders.parkedAt]: new Date().toISOString(),
      [HeraldHeaders.originalQueue]: Queues.apnsSend,
      [HeraldHeaders.attempt]: 1,
    },
  });
  return { job, parkedPush: held };
}

const queuedIds = async () => (await peekMessages(vhost.name, Queues.apnsSend)).map((m) => (JSON.parse(m.payload) as DevicePush).pushId);

describe('herald parked replay of device pushes: their jobs count them in flight again', () => {
  beforeAll(() => t.db.apps.upsert({ id: 'demo' }));
  it('a done job with a parked push reads sending, the push in flight, once it is replayed; done again with its new outcome', async () => {
    const { job, parkedPush } = await deliveredAndParked();
    expect(await statusOf(job)).toEqual({ state: 'done', inFlight: 0, delivered: 1, parked: 1 });
    const replay = await heraldPrinting('parked', 'replay', Queues.apnsSend, '--code', 'provider-down');
    expect(replay).toEqual({ code: 0, stdout: expect.stringMatching(/^replayed 1 of \d+ parked message\(s\)\n$/) as unknown, stderr: '' });
    expect(await queuedIds()).toContain(parkedPush);
    expect(await statusOf(job)).toEqual({ state: 'sending', inFlight: 1, delivered: 1, parked: 0 });
    // Its pusher's new outcome (here written as the pusher writes it).
    await t.db.jobs.recordOutcomes([{ pushId: parkedPush, jobId: job, outcome: 'delivered' }]);
    expect(await statusOf(job)).toEqual({ state: 'done', inFlight: 0, delivered: 2, parked: 0 });
  });

  it('replays all the same when PostgreSQL refuses the clearing, and says on stderr that the job still counts the push parked', async () => {
    const { job, parkedPush } = await deliveredAndParked();
    // PostgreSQL refuses the clearing's statement (its table is not there for a moment); the audit and the lease are written elsewhere.
    await t.db.kysely.schema.alterTable('push_outcomes').renameTo('push_outcomes_away').execute();
    let replay: Awaited<ReturnType<typeof heraldPrinting>>;
    try {
      replay = await heraldPrinting('parked', 'replay', Queues.apnsSend, '--id', parkedPush);
    } finally {
      await t.db.kysely.schema.alterTable('push_outcomes_away').renameTo('push_outcomes').execute();
    }
    expect(replay.code).toBe(0);
    // Before it, the CLI's database log has its JSON line for the failed statement (with-database.ts logs every one).
    expect(replay.stdout).toMatch(/(^|\n)replayed 1 of \d+ parked message\(s\)\n$/);
    expect(replay.stderr).toMatch(/^the parked outcomes of 1 replayed push\(es\) could not be cleared \(PostgreSQL: .*push_outcomes.*\): their jobs count them parked, not in flight, until the pushers write their new outcomes\n$/);
    expect(await queuedIds()).toContain(parkedPush);
    expect(await statusOf(job)).toEqual({ state: 'done', inFlight: 0, delivered: 1, parked: 1 });
  });
});
