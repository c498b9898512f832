import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ParkedLeaseInterrupted, ParkedQueueBusy, withParkedLease } from './parked-lease.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('parked_lease');
});
afterAll(() => t.drop());

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

describe('withParkedLease', () => {
  it("refuses a second operation on a queue while another's runs, naming it, and lets it run once that one ends", async () => {
    const first = gate();
    const running = withParkedLease(t.db.kysely, 'push.apns.send.parked', 'herald ann@ops-1 (pid 1)', () => first.opened.then(() => 'replayed'));
    await new Promise((r) => setTimeout(r, 100));
    const refused = await withParkedLease(t.db.kysely, 'push.apns.send.parked', 'the dashboard of the monitor on m-1 (pid 2)', async () => 'listed', { waitMs: 300 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ParkedQueueBusy);
    expect((refused as ParkedQueueBusy).message).toMatch(/^push\.apns\.send\.parked is being read by herald ann@ops-1 \(pid 1\) \(since \d{4}-/);
    // Another queue is free meanwhile.
    expect(await withParkedLease(t.db.kysely, 'push.fcm.send.parked', 'the dashboard of the monitor on m-1 (pid 2)', async () => 'listed', { waitMs: 0 })).toBe('listed');
    // One waiting long enough goes once the first ends (its row deleted), not after the lease's ttl.
    const waiting = withParkedLease(t.db.kysely, 'push.apns.send.parked', 'the dashboard of the monitor on m-1 (pid 2)', async () => 'listed', { waitMs: 10_000 });
    const endedAt = performance.now();
    first.open();
    expect(await running).toBe('replayed');
    expect(await waiting).toBe('listed');
    expect(performance.now() - endedAt).toBeLessThan(2_000);
  });

  it("takes over the lease of a holder that died (its row past its expiry), and leaves none behind when its work throws", async () => {
    await sql`insert into leases (name, holder, expires_at) values ('parked:push.jobs.parked', 'a killed CLI', now() - interval '1 second')`.execute(t.db.kysely);
    await expect(withParkedLease(t.db.kysely, 'push.jobs.parked', 'herald bob@ops-2 (pid 3)', async () => Promise.reject(new Error('the broker went away')), { waitMs: 0 })).rejects.toThrow('the broker went away');
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from leases where name = 'parked:push.jobs.parked'`.execute(t.db.kysely);
    expect(rows[0]?.n).toBe(0);
  });

  it('renews the lease while the work lasts longer than its ttl, so no one else takes it', async () => {
    const long = gate();
    const running = withParkedLease(t.db.kysely, 'push.web.send.parked', 'herald ann@ops-1 (pid 1)', () => long.opened, { ttlMs: 600 });
    await new Promise((r) => setTimeout(r, 1_500));
    await expect(withParkedLease(t.db.kysely, 'push.web.send.parked', 'herald bob@ops-2 (pid 3)', async () => undefined, { waitMs: 0 })).rejects.toBeInstanceOf(ParkedQueueBusy);
    long.open();
    await running;
  });

  // A herald parked list of an unknown queue threw before its work began: the renewals went on, and the CLI never exited.
  it('lets the lease go, and renews it no more, when the work throws before it returns a promise', async () => {
    const thrown = (): Promise<string> => {
      throw new Error('no queue "bogus"');
    };
    await expect(withParkedLease(t.db.kysely, 'push.bogus.parked', 'herald ann@ops-1 (pid 1)', thrown, { ttlMs: 300 })).rejects.toThrow('no queue "bogus"');
    await new Promise((r) => setTimeout(r, 400));
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from leases where name = 'parked:push.bogus.parked'`.execute(t.db.kysely);
    expect(rows[0]?.n).toBe(0);
  });

  // An operator's Ctrl-C: before, the row stayed for the lease's 90 s and the next command was refused by a run no longer there.
  it('an interrupted operation lets the lease go at once, without waiting for its work, and a waiting one stops waiting', async () => {
    const never = gate();
    const interrupt = new AbortController();
    const running = withParkedLease(t.db.kysely, 'push.webhook.send.parked', 'herald ann@ops-1 (pid 1)', () => never.opened, { signal: interrupt.signal });
    await new Promise((r) => setTimeout(r, 100));
    const waiter = new AbortController();
    const waiting = withParkedLease(t.db.kysely, 'push.webhook.send.parked', 'herald bob@ops-2 (pid 3)', async () => 'listed', { signal: waiter.signal });
    waiter.abort();
    await expect(waiting).rejects.toBeInstanceOf(ParkedLeaseInterrupted);
    interrupt.abort();
    await expect(running).rejects.toThrow("interrupted: push.webhook.send.parked's lease released");
    expect(await withParkedLease(t.db.kysely, 'push.webhook.send.parked', 'herald bob@ops-2 (pid 3)', async () => 'listed', { waitMs: 0 })).toBe('listed');
  });

  // Before, work that finished within the grace after a Ctrl-C was reported interrupted (exit 130, the audit row failed) though it had done all it was to.
  it('an interrupted operation that finishes within the grace returns what it did; one that stops early is interrupted', async () => {
    const interrupt = new AbortController();
    const finishing = withParkedLease(t.db.kysely, 'push.fcm.send.parked', 'herald ann@ops-1 (pid 1)', () => new Promise<string>((resolve) => setTimeout(() => resolve('replayed 12 of 12'), 300)), {
      signal: interrupt.signal,
      stopGraceMs: 2_000,
    });
    await new Promise((r) => setTimeout(r, 100));
    interrupt.abort();
    await expect(finishing).resolves.toBe('replayed 12 of 12');
    const stopping = new AbortController();
    const stopped = withParkedLease(
      t.db.kysely,
      'push.fcm.send.parked',
      'herald ann@ops-1 (pid 1)',
      () => new Promise<string>((_, reject) => stopping.signal.addEventListener('abort', () => setTimeout(() => reject(new Error('stopped after 5 of 12')), 50))),
      { signal: stopping.signal, stopGraceMs: 2_000 },
    );
    await new Promise((r) => setTimeout(r, 100));
    stopping.abort();
    await expect(stopped).rejects.toBeInstanceOf(ParkedLeaseInterrupted);
    // Told which rejections are its stop, one that is not is the work's own failure, said as it is.
    const failing = new AbortController();
    const failed = withParkedLease(
      t.db.kysely,
      'push.fcm.send.parked',
      'herald ann@ops-1 (pid 1)',
      () => new Promise<string>((_, reject) => failing.signal.addEventListener('abort', () => setTimeout(() => reject(new Error('queue "p.deleted" does not exist')), 50))),
      { signal: failing.signal, stopGraceMs: 2_000, isStop: (err) => err instanceof Error && err.message.startsWith('stopped after') },
    );
    await new Promise((r) => setTimeout(r, 100));
    failing.abort();
    await expect(failed).rejects.toThrow('queue "p.deleted" does not exist');
  });
});

