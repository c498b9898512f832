import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAnnouncedAlarmStore, holdLease, type Lease } from '@herald/db';
import { createLogger } from '@herald/logging';
import type { Alarm } from '@herald/monitoring';
import { Registry } from '@herald/runtime';
import { createTestDatabase, type TestDatabase } from '@herald/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { alarmAnnouncer, type AlarmView } from './alarm-announcer.ts';
import { createMonitorMetrics } from './monitor-metrics.ts';
import { createWebhook } from './webhook.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('alarmannounce');
});
afterAll(() => t.drop());

const LEASE = 'monitor-alarms';
/** Who holds the alarms lease: its row, as holdLease writes it, and what each instance's lease reads. */
let holder = '';
let unknown = false;
async function giveLease(to: string): Promise<void> {
  holder = to;
  await t.db.kysely
    .insertInto('leases')
    .values({ name: LEASE, holder: to, expires_at: new Date(Date.now() + 3_600_000) })
    .onConflict((oc) => oc.column('name').doUpdateSet({ holder: to }))
    .execute();
}
beforeEach(async () => {
  unknown = false;
  await t.db.kysely.deleteFrom('announced_alarms').execute();
});

const alarmOf = (alarm: Alarm['alarm'], queue: string, firedAt = 1_000): Alarm => ({ alarm, queue, summary: `${alarm} on ${queue}`, value: 5, threshold: 1, since: firedAt - 1_000, firedAt });
const storeOf = (name: string) => createAnnouncedAlarmStore(t.db.kysely, { name: LEASE, holder: name });

/** One monitor instance's announcer, with the alarm lines it logged (firing: warn, resolved: info). */
function instance(name: string, opts: { webhook?: ReturnType<typeof createWebhook>; store?: ReturnType<typeof storeOf>; lease?: () => Pick<Lease, 'held' | 'unknown'> } = {}) {
  const logger = createLogger({ service: 'spec', level: 'silent', format: 'json' });
  const warned = vi.spyOn(logger, 'warn');
  const informed = vi.spyOn(logger, 'info');
  const announcer = alarmAnnouncer({ vhost: 'v', logger, metrics: createMonitorMetrics(new Registry()), webhook: opts.webhook, store: opts.store ?? storeOf(name), holds: () => opts.lease?.().held() ?? holder === name, unknown: () => opts.lease?.().unknown() ?? unknown });
  const lines = (): string[] =>
    [...warned.mock.calls, ...informed.mock.calls].flatMap(([fields, msg]) => {
      const f = fields as { state?: string; alarm?: string; queue?: string };
      return typeof msg === 'string' && msg.startsWith('alarm ') ? [`${f.state} ${f.alarm} ${f.queue}`] : [];
    });
  return { announcer, lines };
}
/** What an instance sees: `active` firing; `holding` conditions waiting out their delay; `seen`: whether its reads since taking the lease tell. */
const view = (active: Alarm[], opts: { now?: number; holding?: string[]; seen?: boolean } = {}): AlarmView => ({
  now: opts.now ?? 10_000,
  active,
  holds: (a) => active.some((x) => x.alarm === a.alarm && x.queue === a.queue) || (opts.holding ?? []).includes(`${a.alarm} ${a.queue}`),
  seen: () => opts.seen ?? true,
});
const kept = async (): Promise<string[]> => (await storeOf('anyone').list()).map((a) => `${a.alarm} ${a.queue}`);

describe('alarms said by the lease holder, kept in PostgreSQL across restarts and handovers', () => {
  it('the holder says a firing alarm once and keeps it, and says it resolved once its end is seen; an instance without the lease says nothing', async () => {
    await giveLease('a');
    const a = instance('a');
    const b = instance('b');
    a.announcer.leaseChanged(0);
    const backlog = alarmOf('backlog', 'push.jobs');
    a.announcer.announce({ state: 'firing', alarm: backlog, at: 1_000 });
    b.announcer.announce({ state: 'firing', alarm: backlog, at: 1_000 });
    await a.announcer.reconcile(view([backlog]));
    await b.announcer.reconcile(view([backlog]));
    await a.announcer.flush();
    await a.announcer.reconcile(view([backlog]));
    expect(a.lines()).toEqual(['firing backlog push.jobs']);
    expect(await kept()).toEqual(['backlog push.jobs']);

    await a.announcer.reconcile(view([]));
    await a.announcer.flush();
    await a.announcer.reconcile(view([]));
    expect(a.lines()).toEqual(['firing backlog push.jobs', 'resolved backlog push.jobs']);
    expect(await kept()).toEqual([]);
    expect(b.lines()).toEqual([]);
  });

  it('the next holder (a restart, a handover) does not say a firing alarm again, and says resolved one that ended while nobody announced, once it has seen its source since', async () => {
    await giveLease('a');
    const a = instance('a');
    a.announcer.leaseChanged(0);
    const backlog = alarmOf('backlog', 'push.jobs');
    const stalled = alarmOf('stalled', 'push.fcm.send');
    const overdue = alarmOf('scheduled-overdue', 'scheduled.apns');
    await a.announcer.reconcile(view([backlog, stalled, overdue]));
    await a.announcer.flush();
    expect(await kept()).toEqual(['backlog push.jobs', 'scheduled-overdue scheduled.apns', 'stalled push.fcm.send']);

    // A stops; B takes the lease. The backlog still fires here; the stalled queue recovered while
    // nobody announced; the overdue pushes are still overdue, their alarm still waiting out its delay here.
    await giveLease('b');
    const b = instance('b');
    b.announcer.leaseChanged(20_000);
    const stillFiring = { ...backlog, firedAt: 25_000 };
    await b.announcer.reconcile(view([stillFiring], { holding: ['scheduled-overdue scheduled.apns'], seen: false }));
    expect(b.lines()).toEqual([]); // nothing read since it took the lease: nothing ended yet
    await b.announcer.reconcile(view([stillFiring], { holding: ['scheduled-overdue scheduled.apns'] }));
    await b.announcer.flush();
    expect(b.lines()).toEqual(['resolved stalled push.fcm.send']);
    expect(await kept()).toEqual(['backlog push.jobs', 'scheduled-overdue scheduled.apns']);
    // The overdue alarm fires here at last: it was said, so it is not said again.
    await b.announcer.reconcile(view([stillFiring, overdue]));
    expect(b.lines()).toEqual(['resolved stalled push.fcm.send']);
  });

  it('an alarm that fired and ended between two rounds is said firing, then resolved', async () => {
    await giveLease('a');
    const a = instance('a');
    a.announcer.leaseChanged(0);
    const missing = alarmOf('queue-missing', 'push.web.send');
    a.announcer.announce({ state: 'firing', alarm: missing, at: 1_000 });
    a.announcer.announce({ state: 'resolved', alarm: missing, at: 2_000 });
    await a.announcer.reconcile(view([]));
    await a.announcer.flush();
    await a.announcer.reconcile(view([]));
    expect(a.lines()).toEqual(['firing queue-missing push.web.send', 'resolved queue-missing push.web.send']);
  });

  it('an instance takes nothing it saw fire before it held the lease into its rounds: alarms firing then are in what it sees', async () => {
    await giveLease('a');
    const a = instance('a');
    const b = instance('b');
    a.announcer.leaseChanged(0);
    const old = alarmOf('backlog', 'push.jobs');
    for (const i of [a, b]) i.announcer.announce({ state: 'firing', alarm: old, at: 1_000 });
    await a.announcer.reconcile(view([old]));
    for (const i of [a, b]) i.announcer.announce({ state: 'resolved', alarm: old, at: 2_000 });
    await a.announcer.flush();
    await a.announcer.reconcile(view([]));
    await a.announcer.flush();
    // A stops; B takes the lease: the backlog of an hour ago is not said again.
    await giveLease('b');
    b.announcer.leaseChanged(30_000);
    await b.announcer.reconcile(view([]));
    expect(b.lines()).toEqual([]);
  });

  it('the holder that cannot read what was said says what fires, then each transition as it happens, until it can read again', async () => {
    await giveLease('a');
    const a = instance('a', { store: createAnnouncedAlarmStore(t.db.kysely.withSchema('herald_no_such_schema'), { name: LEASE, holder: 'a' }) });
    a.announcer.leaseChanged(0);
    const backlog = alarmOf('backlog', 'push.jobs');
    await a.announcer.reconcile(view([backlog]));
    await a.announcer.reconcile(view([backlog]));
    const stalled = alarmOf('stalled', 'push.fcm.send');
    a.announcer.announce({ state: 'firing', alarm: stalled, at: 3_000 });
    expect(a.lines()).toEqual(['firing backlog push.jobs', 'firing stalled push.fcm.send']);
  });

  it('writes of an instance that lost the lease are not kept (they would undo what the next holder recorded)', async () => {
    await giveLease('b');
    await storeOf('a').fired(alarmOf('backlog', 'push.jobs'));
    expect(await kept()).toEqual([]);
    await storeOf('b').fired(alarmOf('backlog', 'push.jobs'));
    await storeOf('a').resolved({ alarm: 'backlog', queue: 'push.jobs' });
    expect(await kept()).toEqual(['backlog push.jobs']);
  });

  it('while nobody can tell who holds the lease (the database does not answer) every instance says each transition as it happens, keeping nothing', async () => {
    await giveLease('a');
    unknown = true;
    const a = instance('a');
    const b = instance('b');
    const lag = alarmOf('database-unreachable', '*');
    for (const i of [a, b]) i.announcer.announce({ state: 'firing', alarm: lag, at: 1_000 });
    await a.announcer.reconcile(view([lag]));
    expect([a.lines(), b.lines()]).toEqual([['firing database-unreachable *'], ['firing database-unreachable *']]);
    expect(await kept()).toEqual([]);
  });

  it('alarms said during a database outage: whoever said one says its end; the holder records one still firing without saying it again', async () => {
    await giveLease('b');
    unknown = true;
    const a = instance('a');
    const b = instance('b');
    const lag = alarmOf('database-unreachable', '*');
    const backlog = alarmOf('backlog', 'push.jobs');
    for (const i of [a, b]) {
      i.announcer.announce({ state: 'firing', alarm: lag, at: 1_000 });
      i.announcer.announce({ state: 'firing', alarm: backlog, at: 1_000 });
    }
    // The database is back: B holds the lease. The outage's alarm ends on both before B's first round.
    unknown = false;
    b.announcer.leaseChanged(5_000);
    for (const i of [a, b]) i.announcer.announce({ state: 'resolved', alarm: lag, at: 6_000 });
    await b.announcer.reconcile(view([backlog]));
    await b.announcer.flush();
    expect(await kept()).toEqual(['backlog push.jobs']);
    // The backlog ends later: the holder says it from the table, the other instance from what it said.
    for (const i of [a, b]) i.announcer.announce({ state: 'resolved', alarm: backlog, at: 9_000 });
    await b.announcer.reconcile(view([]));
    await b.announcer.flush();
    const story = ['firing database-unreachable *', 'firing backlog push.jobs', 'resolved database-unreachable *', 'resolved backlog push.jobs'];
    expect([a.lines().sort(), b.lines().sort()]).toEqual([[...story].sort(), [...story].sort()]);
    expect(await kept()).toEqual([]);
  });

  it('a post abandoned at shutdown is not kept as said: the next holder says it', async () => {
    const hanging = createServer(() => undefined); // takes the post, never answers
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    try {
      await giveLease('a');
      const logger = createLogger({ service: 'spec', level: 'silent', format: 'json' });
      const webhook = createWebhook(`http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`, logger, () => undefined);
      const a = instance('a', { webhook });
      a.announcer.leaseChanged(0);
      const backlog = alarmOf('backlog', 'push.jobs');
      await a.announcer.reconcile(view([backlog]));
      await webhook.drain(100);
      await a.announcer.flush();
      expect(await kept()).toEqual([]);

      await giveLease('b');
      const b = instance('b');
      b.announcer.leaseChanged(20_000);
      await b.announcer.reconcile(view([backlog]));
      await b.announcer.flush();
      expect(b.lines()).toEqual(['firing backlog push.jobs']);
      expect(await kept()).toEqual(['backlog push.jobs']);
    } finally {
      hanging.closeAllConnections();
      await new Promise<void>((resolve) => hanging.close(() => resolve()));
    }
  });
});

const TTL = 1_500;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
async function until(what: string, ok: () => boolean, timeoutMs = 5 * TTL): Promise<void> {
  const start = Date.now();
  while (!ok()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('a blind monitor replica (polls of the management API failing) leaves announcing to one that sees', () => {
  /** Each test its own lease (the other tests' rows name 'monitor-alarms'). */
  let leaseName = '';
  let n = 0;
  const replicas: Array<{ lease: Lease; announcer: ReturnType<typeof alarmAnnouncer> }> = [];
  beforeEach(() => {
    leaseName = `monitor-alarms-standby-${++n}`;
  });
  afterEach(async () => {
    // As main.ts stops: the last round, the store's writes (no record landing in the next test's table), the lease.
    for (const r of replicas.splice(0)) {
      await r.announcer.stop();
      await r.announcer.flush();
      await r.lease.stop();
    }
  });

  /** A monitor replica as main.ts wires it: its announcer over the real alarms lease, standing by while blind; `changes`: the lease taken (true) and lost. */
  function replica(name: string, sight: { blind: boolean }) {
    // The announcer asks the lease only at its rounds and transitions, which come after it is made.
    const i = instance(name, { store: createAnnouncedAlarmStore(t.db.kysely, { name: leaseName, holder: name }), lease: () => lease });
    const changes: boolean[] = [];
    const lease = holdLease(t.db.kysely, {
      name: leaseName,
      holder: name,
      ttlMs: TTL,
      standBy: () => sight.blind,
      onChange: (held) => {
        changes.push(held);
        i.announcer.leaseChanged(held ? Date.now() : undefined);
      },
    });
    replicas.push({ lease, announcer: i.announcer });
    return { ...i, lease, changes };
  }
  const unreachable = alarmOf('rabbitmq-unreachable', '*', 9_000);

  it('a holder gone blind gives the lease up to the one that sees, which says resolved what it saw end and firing what it saw start, nothing said twice', async () => {
    const sightA = { blind: false };
    const a = replica('a', sightA);
    await until('a holds', () => a.lease.held());
    const b = replica('b', { blind: false });
    const backlog = alarmOf('backlog', 'push.jobs');
    const stalled = alarmOf('stalled', 'push.fcm.send');
    await a.announcer.reconcile(view([backlog, stalled]));
    await a.announcer.flush();

    // A can no longer read the management API: its view stays as it was, and rabbitmq-unreachable
    // fires on it. B sees the backlog gone, the stall still there and a queue without consumers.
    sightA.blind = true;
    await until('b takes the lease over', () => b.lease.held() && !a.lease.held());
    a.announcer.announce({ state: 'firing', alarm: unreachable, at: 9_000 });
    await a.announcer.reconcile(view([backlog, stalled, unreachable], { seen: false }));
    const noConsumer = alarmOf('no-consumer', 'push.apns.send', 8_000);
    await b.announcer.reconcile(view([stalled, noConsumer]));
    await b.announcer.flush();
    expect(a.lines()).toEqual(['firing backlog push.jobs', 'firing stalled push.fcm.send']);
    expect(b.lines().sort()).toEqual(['firing no-consumer push.apns.send', 'resolved backlog push.jobs']);
    expect(await kept()).toEqual(['stalled push.fcm.send', 'no-consumer push.apns.send']);
  });

  it('when every replica is blind, one takes the lease all the same and says rabbitmq-unreachable, once', async () => {
    const a = replica('a', { blind: true });
    const b = replica('b', { blind: true });
    await until('one holds', () => a.lease.held() || b.lease.held());
    await sleep(TTL); // a few tries each: still one holder
    expect([a.lease.held(), b.lease.held()].filter(Boolean)).toEqual([true]);
    for (const r of [a, b]) {
      r.announcer.announce({ state: 'firing', alarm: unreachable, at: 9_000 });
      await r.announcer.reconcile(view([unreachable], { seen: false }));
    }
    expect([...a.lines(), ...b.lines()]).toEqual(['firing rabbitmq-unreachable *']);
  });

  it('one monitor alone that goes blind keeps the lease and says rabbitmq-unreachable, as before', async () => {
    const sight = { blind: false };
    const a = replica('a', sight);
    await until('a holds', () => a.lease.held());
    sight.blind = true;
    await sleep(TTL);
    expect(a.changes).toEqual([true]);
    a.announcer.announce({ state: 'firing', alarm: unreachable, at: 9_000 });
    await a.announcer.reconcile(view([unreachable], { seen: false }));
    expect(a.lines()).toEqual(['firing rabbitmq-unreachable *']);
  });

  it('a holder that goes blind just after the other keeps the lease (no handover between blind replicas) and says rabbitmq-unreachable', async () => {
    const sightA = { blind: false };
    const sightB = { blind: false };
    const a = replica('a', sightA);
    await until('a holds', () => a.lease.held());
    const b = replica('b', sightB);
    await sleep(TTL); // b says it wants the lease at each try
    sightB.blind = true;
    await sleep(TTL / 6); // b's last say (live for a ttl) is still fresh at a's first try blind
    sightA.blind = true;
    await sleep(2 * TTL);
    expect([a.changes, b.changes]).toEqual([[true], []]);
    a.announcer.announce({ state: 'firing', alarm: unreachable, at: 9_000 });
    await a.announcer.reconcile(view([unreachable], { seen: false }));
    expect(a.lines()).toEqual(['firing rabbitmq-unreachable *']);
  });
});
